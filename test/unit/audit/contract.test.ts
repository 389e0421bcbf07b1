import { describe, expect, it } from "vitest";
import { parseSweepInput, parseSweepReport, type SweepInput } from "../../../src/audit/contract.js";

const input: SweepInput = {
  kubeconfig: "apiVersion: v1",
  request: {
    node: "n1",
    pods: ["shop/web"],
    policy: "evict",
    limits: { excludeNamespaces: ["kube-system"], skipUids: ["u1"], evictionsLeft: 1 },
    self: { namespace: "meshcni", name: "agent-x" },
    dirs: { hostRoot: "/host", stateDir: "/var/run/meshcni", netDir: "/etc/cni/net.d", netnsDirs: ["/var/run/netns"], criSocket: "auto" },
  },
};

describe("the sweep contract", () => {
  it("takes back what the agent sends, and audit-only requests without a policy or an own pod", () => {
    expect(parseSweepInput(JSON.stringify(input))).toEqual(input);
    const { policy: _policy, self: _self, ...auditOnly } = input.request;
    expect(parseSweepInput(JSON.stringify({ ...input, request: auditOnly })).request.policy).toBeUndefined();
  });

  it.each([
    ["not JSON", "{", /^the sweep's input is not JSON: /],
    ["no kubeconfig", JSON.stringify({ request: input.request }), /^the sweep's input is malformed: kubeconfig: /],
    ["an unknown policy", JSON.stringify({ ...input, request: { ...input.request, policy: "delete" } }), /: request\.policy: /],
    [
      "a negative eviction budget",
      JSON.stringify({ ...input, request: { ...input.request, limits: { ...input.request.limits, evictionsLeft: -1 } } }),
      /: request\.limits\.evictionsLeft: /,
    ],
  ])("refuses %s, naming the field", (_what, text, message) => {
    expect(() => parseSweepInput(text)).toThrow(message);
  });

  it("checks a report's statuses, results and counts", () => {
    const report = {
      node: "n1",
      pods: [
        { namespace: "shop", name: "web", uid: "u", status: "drifted", details: ["d"], action: "redirect", result: { failed: "EPERM" } },
      ],
      summary: { protected: 0, adopted: 0, missing: 0, drifted: 1, unknown: 0 },
      recordsRemoved: { podGone: 0, netnsGone: 0, sandboxGone: 0 },
      backends: { node: "nftables", records: { nft: 1, nftables: 2 } },
    };
    expect(parseSweepReport(JSON.stringify(report))).toEqual(report);
    const wrongStatus = { ...report, pods: [{ ...report.pods[0], status: "fine" }] };
    expect(() => parseSweepReport(JSON.stringify(wrongStatus))).toThrow(/^the sweep's report is malformed: pods\[0\]\.status: /);
    const wrongBackend = { ...report, backends: { records: { ebpf: 1 } } };
    expect(() => parseSweepReport(JSON.stringify(wrongBackend))).toThrow(/^the sweep's report is malformed: backends\.records/);
  });
});
