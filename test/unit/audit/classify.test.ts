import { describe, expect, it } from "vitest";
import { classify, type Identified, newestRecordByUid, podsToAudit, unfinishedAdd } from "../../../src/audit/classify.js";
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

  it("uses a pod's newest record", () => {
    const records = [record("u", "2026-01-01T00:00:00Z"), record("u", "2026-01-02T00:00:00Z"), record("v", "2026-01-01T00:00:00Z")];
    expect(newestRecordByUid(records).get("u")?.time).toBe("2026-01-02T00:00:00Z");
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
  });

  it("unknown: no netns, saying why", () => {
    expect(classify(web, undefined, { found: false, reason: "no netns holds 10.0.0.9" })).toMatchObject({
      status: "unknown",
      details: ["no netns holds 10.0.0.9"],
    });
  });
});
