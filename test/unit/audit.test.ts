import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { auditPods, newestRecordByUid, podsToAudit } from "../../src/audit/classify.js";
import { renderTable, report } from "../../src/audit/format.js";
import { eventMessage, repairAction } from "../../src/audit/repair.js";
import { parseTaint } from "../../src/installer/taint.js";
import type { AttachmentRecord } from "../../src/plugin/records.js";
import { podObject } from "../support/api-server.js";

const pod = (name: string, options: Parameters<typeof podObject>[2] = {}) =>
  podObject("shop", name, { proxy: "container", nodeName: "n1", podIP: "10.0.0.9", ...options }) as V1Pod;
const record = (uid: string, time: string, netns = "/var/run/netns/x"): AttachmentRecord => ({
  version: 1,
  pod: { namespace: "shop", name: uid, uid },
  containerId: `c-${time}`,
  ifname: "eth0",
  netns,
  backend: "nft",
  plans: [],
  fingerprint: "f",
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

describe("repair decisions", () => {
  const self = { namespace: "meshcni", name: "agent" };

  it("deletes a pod with a controller, labels one without, by policy", () => {
    expect(repairAction(pod("a", { owned: true }), "delete", self)).toBe("delete");
    expect(repairAction(pod("b"), "delete", self)).toBe("label");
    expect(repairAction(pod("c", { owned: true }), "label", self)).toBe("label");
    expect(repairAction(pod("d", { owned: true }), "none", self)).toBe("none");
  });

  it("leaves a pod an earlier agent already labelled", () => {
    expect(repairAction(pod("f", { owned: true, labels: { "meshcni.io/unprotected": "true" } }), "delete", self)).toEqual({
      skip: "already labelled meshcni.io/unprotected=true",
    });
  });

  it("never touches its own pod or a pod already being deleted", () => {
    expect(repairAction(podObject("meshcni", "agent", { owned: true }) as V1Pod, "delete", self)).toEqual({ skip: "the agent's own pod" });
    expect(repairAction(pod("e", { owned: true, deleting: true }), "delete", self)).toEqual({ skip: "already being deleted" });
  });

  it("says in the event why and what happens next", () => {
    const audit = { namespace: "shop", name: "a", uid: "u", status: "missing" as const, details: ["no ADD record"] };
    expect(eventMessage(audit, "delete", "delete")).toBe(
      "This pod started without meshcni's iptables redirect (no ADD record), so its TCP traffic can bypass the mesh proxy; meshcni deletes it so its controller recreates it with the redirect.",
    );
    expect(eventMessage(audit, "label", "delete")).toContain("labels it meshcni.io/unprotected=true instead of deleting it");
    expect(eventMessage(audit, "none", "none")).toContain("restart the pod");
  });
});

describe("audit output", () => {
  it("prints a row per pod, the differences of a drifted pod below it, and a summary", () => {
    const text = renderTable(
      report("n1", [
        { namespace: "shop", name: "cart", uid: "1", status: "missing", details: ["no ADD record"] },
        { namespace: "shop", name: "search", uid: "2", status: "drifted", details: ["ipv4: a", "ipv4: b"] },
      ]),
    );
    expect(text.split("\n")).toEqual([
      "NAMESPACE  POD     STATUS   DETAIL",
      "shop       cart    missing  no ADD record",
      "shop       search  drifted  ipv4: a",
      "                            ipv4: b",
      "",
      "node n1: 2 meshed pods, 0 protected, 1 missing, 1 drifted, 0 unknown",
      "",
    ]);
  });
});

describe("startup taint", () => {
  it("reads kubectl's key[=value][:Effect]", () => {
    expect(parseTaint("meshcni.io/not-ready")).toEqual({ key: "meshcni.io/not-ready", effect: "NoSchedule" });
    expect(parseTaint("meshcni.io/not-ready=true:NoExecute")).toEqual({ key: "meshcni.io/not-ready", value: "true", effect: "NoExecute" });
    expect(() => parseTaint("a:Sometimes")).toThrow(/--startup-taint/);
    expect(() => parseTaint("bad key")).toThrow(/--startup-taint/);
  });
});
