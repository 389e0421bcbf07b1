import { describe, expect, it } from "vitest";
import type { PodReport, SweepReport } from "../../../src/audit/contract.js";
import { renderTable } from "../../../src/audit/format.js";

const report = (pods: PodReport[], recordsRemoved = { podGone: 0, netnsGone: 0, sandboxGone: 0 }): SweepReport => {
  const summary = { protected: 0, adopted: 0, missing: 0, drifted: 0, unknown: 0 };
  for (const pod of pods) summary[pod.status]++;
  return { node: "n1", pods, summary, recordsRemoved, backends: { records: {} } };
};

describe("audit output", () => {
  it("prints a row per pod, the differences of a drifted pod below it, and a summary", () => {
    const text = renderTable(
      report([
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
      "node n1: 2 meshed pods, 0 protected, 0 adopted, 1 missing, 1 drifted, 0 unknown",
      "",
    ]);
  });

  it("adds what a sweep did, why a pod was left alone, and the records it removed", () => {
    const text = renderTable(
      report(
        [
          { namespace: "shop", name: "cart", uid: "1", status: "missing", details: ["no redirect"], action: "redirect", result: "done" },
          { namespace: "shop", name: "db", uid: "2", status: "missing", details: ["no redirect"], action: "evict", result: "blocked" },
          {
            namespace: "kube-system",
            name: "dns",
            uid: "3",
            status: "drifted",
            details: ["ipv4: a"],
            skipped: "namespace kube-system is excluded from repair",
          },
        ],
        { podGone: 2, netnsGone: 1, sandboxGone: 0 },
      ),
    );
    expect(text.split("\n")).toEqual([
      "NAMESPACE    POD   STATUS   ACTION           DETAIL",
      "shop         cart  missing  redirect         no redirect",
      "shop         db    missing  evict (blocked)  no redirect",
      "                                             eviction blocked by a PodDisruptionBudget: tried again at the next sweep",
      "kube-system  dns   drifted  left alone       ipv4: a",
      "                                             left alone: namespace kube-system is excluded from repair",
      "",
      "node n1: 3 meshed pods, 0 protected, 0 adopted, 2 missing, 1 drifted, 0 unknown; 3 stale records removed",
      "",
    ]);
  });
});
