import { describe, expect, it } from "vitest";
import { auditPods, newestRecordByUid, podsToAudit, unfinishedAdd } from "../../../src/audit/classify.js";
import type { AttachmentRecord } from "../../../src/state/records.js";
import { runningPod as pod } from "../../kit/fixtures.js";

const record = (uid: string, time: string, netns = "/var/run/netns/x"): AttachmentRecord => ({
  version: 1,
  state: "added",
  pod: { namespace: "shop", name: uid, uid },
  containerId: `c-${time}`,
  ifname: "eth0",
  netns,
  backend: "nft",
  plans: [],
  time,
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
    expect(
      newestRecordByUid([
        record("u", "2026-01-01T00:00:00Z"),
        record("u", "2026-01-02T00:00:00Z"),
        record("v", "2026-01-01T00:00:00Z"),
      ]).get("u")?.time,
    ).toBe("2026-01-02T00:00:00Z");
  });

  it("calls a pod without a record missing and asks the inspector about the others", async () => {
    const web = pod("web");
    const seen: string[] = [];
    const audits = await auditPods([pod("cart"), web], [record(web.metadata!.uid!, "t")], async (found) => {
      seen.push(found.pod.uid);
      return { status: "drifted", details: ["ipv4: chain PROXY_INIT_OUTPUT is missing"] };
    });
    expect(seen).toEqual([web.metadata!.uid]);
    expect(audits.map((audit) => [audit.name, audit.status])).toEqual([
      ["cart", "missing"],
      ["web", "drifted"],
    ]);
  });
});

describe("an ADD that did not finish", () => {
  const web = pod("web");
  const unfinished = { ...record(web.metadata!.uid!, "t"), state: "adding" as const };

  it("says so first when its rules are partial", async () => {
    const [audit] = await auditPods([web], [unfinished], async () => ({
      status: "drifted",
      details: ["ipv6: chain PROXY_INIT_OUTPUT is missing"],
    }));
    expect(audit).toMatchObject({ status: "drifted", details: [unfinishedAdd, "ipv6: chain PROXY_INIT_OUTPUT is missing"] });
  });

  it("is protected when every rule got in before it stopped", async () => {
    const [audit] = await auditPods([web], [unfinished], async () => ({ status: "protected", details: [] }));
    expect(audit).toMatchObject({ status: "protected", details: [] });
  });
});
