import { describe, expect, it } from "vitest";
import {
  asAdded,
  classify,
  type Identified,
  isUnprotected,
  newestRecordByUid,
  type PodAudit,
  podStatuses,
  podsToAudit,
  sortAudits,
  unfinishedAdd,
} from "../../../src/audit/classify.js";
import type { AttachmentRecord } from "../../../src/state/records.js";
import { runningPod as pod } from "../../kit/fixtures.js";

const record = (uid: string, time: string, state: AttachmentRecord["state"] = "added"): AttachmentRecord => ({
  version: 1,
  state,
  pod: { namespace: "shop", name: uid, uid },
  containerId: `c-${time}`,
  ifname: "eth0",
  netns: "/var/run/netns/x",
  backend: "nft",
  plans: [],
  time,
});
const found = (differences: string[] = [], hasRedirect = true, identifiedBy: Identified = "runtime") => ({
  found: true as const,
  netns: "/var/run/netns/x",
  identifiedBy,
  differences,
  hasRedirect,
});

describe("which pods are audited", () => {
  it("takes meshed pods with a pod network that is up, and nothing else", () => {
    const hostNetwork = pod("host");
    hostNetwork.spec!.hostNetwork = true;
    const finished = pod("done");
    finished.status!.phase = "Succeeded";
    const names = podsToAudit([
      pod("web"),
      pod("plain", { proxy: false }),
      pod("init", { init: true }),
      pod("scheduled", { podIP: "" }),
      hostNetwork,
      finished,
    ]).map((p) => p.metadata!.name);
    expect(names).toEqual(["web"]);
  });

  it("takes a pending pod whose network is up, and one with no status at all is not", () => {
    const pending = pod("starting");
    pending.status!.phase = "Pending";
    const unreported = pod("new");
    delete unreported.status;
    expect(podsToAudit([pending, unreported]).map((p) => p.metadata!.name)).toEqual(["starting"]);
  });

  it("uses a pod's newest record, whatever order they are listed in", () => {
    const records = [record("u", "2026-01-01T00:00:00Z"), record("u", "2026-01-02T00:00:00Z"), record("v", "2026-01-01T00:00:00Z")];
    expect(newestRecordByUid(records).get("u")?.time).toBe("2026-01-02T00:00:00Z");
    const newest = newestRecordByUid([...records].reverse());
    expect([...newest].map(([uid, { time }]) => `${uid} ${time}`)).toEqual(["v 2026-01-01T00:00:00Z", "u 2026-01-02T00:00:00Z"]);
  });
});

describe("classifying by what the netns holds", () => {
  const web = pod("web");
  const recorded = record(web.metadata!.uid!, "t");

  it("protected: the recorded plan is there; adopted: the plan is there without a record", () => {
    expect(classify(web, recorded, found())).toMatchObject({ status: "protected", details: [] });
    expect(classify(web, undefined, found())).toMatchObject({ status: "adopted", details: [expect.stringContaining("linkerd-cni")] });
  });

  it("unknown whatever it holds when only an IP pointed to the netns: never protected, adopted or repaired on a hint", () => {
    expect(classify(web, undefined, found([], true, "ip"))).toMatchObject({
      status: "unknown",
      details: [expect.stringContaining("which holds meshcni's plan")],
    });
    const differences = ["ipv4: PROXY_INIT_OUTPUT: missing rule: -o lo -j RETURN"];
    expect(classify(web, undefined, found(differences, true, "ip")).details).toEqual([
      expect.stringContaining("which holds rules that differ from the plan"),
      ...differences,
    ]);
    expect(classify(web, undefined, found(["ipv4: chain PROXY_INIT_OUTPUT is missing"], false, "ip")).status).toBe("unknown");
  });

  it("missing: no redirect at all, with or without a record", () => {
    expect(classify(web, undefined, found(["ipv4: chain PROXY_INIT_OUTPUT is missing"], false))).toMatchObject({
      status: "missing",
      details: [expect.stringContaining("set up without meshcni")],
    });
    expect(classify(web, recorded, found(["ipv4: chain PROXY_INIT_OUTPUT is missing"], false)).status).toBe("missing");
  });

  it("drifted: some of it, listed; an unfinished ADD says so first", () => {
    const differences = ["ipv4: PROXY_INIT_OUTPUT: missing rule: -o lo -j RETURN"];
    expect(classify(web, recorded, found(differences))).toMatchObject({ status: "drifted", details: differences });
    expect(classify(web, record(web.metadata!.uid!, "t", "adding"), found(differences)).details).toEqual([unfinishedAdd, ...differences]);
    expect(classify(web, record(web.metadata!.uid!, "t", "adding"), found()).status).toBe("protected");
    // Without a record (linkerd-cni's rules, changed since): drifted too, and no word of an unfinished ADD.
    expect(classify(web, undefined, found(differences))).toMatchObject({ status: "drifted", details: differences });
    expect(unfinishedAdd).toBe("ADD did not finish (the plugin was stopped midway); the runtime's DEL removes what it wrote");
  });

  it("drifted by its record alone: the netns holds the pod's plan, the record another; protected, said so, where the netns holds the record's", () => {
    const drift = ["its ADD record's ipv4 plan has -A C -j RETURN"];
    expect(classify(web, recorded, found(), drift)).toMatchObject({ status: "drifted", details: drift });
    const asRecorded = { ...found(["ipv4: C: missing rule: -j RETURN"]), matchesRecord: true };
    expect(classify(web, recorded, asRecorded, drift)).toEqual(expect.objectContaining({ status: "protected", details: [asAdded] }));
    expect(asAdded).toBe(
      "its rules are the plan ADD made; its annotations, its namespace's or meshcni's entry changed since: restart the pod to take them",
    );
    expect(classify(web, recorded, { ...asRecorded, matchesRecord: false }, drift)).toMatchObject({
      status: "drifted",
      details: ["ipv4: C: missing rule: -j RETURN"],
    });
  });

  it("unknown: no netns, saying why", () => {
    expect(classify(web, undefined, { found: false, reason: "no netns holds 10.0.0.9" })).toMatchObject({
      status: "unknown",
      details: ["no netns holds 10.0.0.9"],
    });
  });
});

describe("what the audit says of each pod", () => {
  const web = pod("web");
  const netnsOnly = "only its IP points to netns /var/run/netns/x (no container runtime to confirm it; see --cri-socket), which holds";

  it("names the pod and its UID in every verdict, and explains each but protected in full", () => {
    const recorded = record(web.metadata!.uid!, "t");
    const missing = ["ipv4: chain PROXY_INIT_OUTPUT is missing"];
    expect(classify(web, recorded, found())).toEqual({
      namespace: "shop",
      name: "web",
      uid: web.metadata!.uid,
      status: "protected",
      details: [],
    });
    expect(classify(web, undefined, found()).details).toEqual([
      "no meshcni record, but its netns holds meshcni's plan (set up by linkerd-cni or an earlier install)",
    ]);
    expect(classify(web, recorded, found(missing, false)).details).toEqual(["its netns holds none of the redirect ADD recorded"]);
    expect(classify(web, undefined, found(missing, false)).details).toEqual([
      "no ADD record and no redirect in its netns: the pod's network was set up without meshcni in the chain",
    ]);
    expect(classify(web, undefined, found([], true, "ip")).details).toEqual([`${netnsOnly} meshcni's plan`]);
    expect(classify(web, recorded, found(missing, false, "ip"))).toMatchObject({
      status: "unknown",
      details: [`${netnsOnly} no redirect`],
    });
  });

  it("gives a pod without a UID an empty one", () => {
    const anonymous = pod("anonymous");
    delete anonymous.metadata!.uid;
    expect(classify(anonymous, undefined, { found: false, reason: "no netns" })).toMatchObject({
      namespace: "shop",
      name: "anonymous",
      uid: "",
    });
  });

  it("sorts by namespace, then name; counts missing and drifted as unprotected, nothing else", () => {
    const audit = (namespace: string, name: string): PodAudit => ({ namespace, name, uid: "", status: "protected", details: [] });
    const sorted = sortAudits([audit("shop", "web"), audit("billing", "api"), audit("shop", "cart")]);
    expect(sorted.map(({ namespace, name }) => `${namespace}/${name}`)).toEqual(["billing/api", "shop/cart", "shop/web"]);
    expect(podStatuses.filter((status) => isUnprotected({ ...audit("shop", "web"), status }))).toEqual(["missing", "drifted"]);
  });
});
