import { beforeEach, describe, expect, it } from "vitest";
import { asAdded } from "../../../src/audit/classify.js";
import { recordDrift } from "../../../src/audit/expectation.js";
import { sweep } from "../../../src/audit/sweep.js";
import type { RulePlan } from "../../../src/redirect/plan.js";
import { fakeSweepIo } from "../../kit/audit/fake-sweep.js";
import { sweepOptions as options, sweepScene } from "../../kit/audit/sweep-scene.js";
import { FakeNode } from "../../kit/plugin/fake-node.js";

/** Every TCP port let through first, in the plan's first chain: what issue 41's F1 wrote in a record. */
const weakened = (plans: RulePlan[]): RulePlan[] =>
  plans.map((plan) => {
    const [chain, rules] = Object.entries(plan.chains)[0]!;
    return {
      ...plan,
      chains: { ...plan.chains, [chain]: [["-p", "tcp", "-m", "multiport", "--dports", "1:65535", "-j", "RETURN"], ...rules] },
    };
  });

/** The audit judges by the pod (meshcni's entry and its annotations), not by what a record on the node's disk says (issue 41). */
describe("a sweep, against a record changed by hand", () => {
  let node: FakeNode;
  const { addedPod } = sweepScene(() => node);

  beforeEach(() => {
    node = new FakeNode();
  });

  const weakenRecord = () => {
    const [name, record] = [...node.records].find(([, found]) => found.pod.name === "checkout")!;
    node.records.set(name, { ...record, plans: weakened(record.plans) });
    return record.plans;
  };

  it("calls the pod drifted, naming what the record has that the pod's plan has not, while its netns still holds the pod's plan", async () => {
    const { netns } = await addedPod("checkout");
    weakenRecord();
    const report = await sweep(options(undefined), fakeSweepIo(node).io);
    expect(report.pods).toEqual([expect.objectContaining({ name: "checkout", status: "drifted" })]);
    expect(report.pods[0]!.details).toEqual([
      expect.stringMatching(/^its ADD record's ipv4 plan has -A \S+ -p tcp -m multiport --dports 1:65535 -j RETURN$/),
    ]);
    expect(node.rules(netns).join("\n")).not.toContain("1:65535");
  });

  it("--repair redirect writes the pod's plan, never the record's, and records it: the next sweep finds it protected", async () => {
    const { netns } = await addedPod("checkout");
    const before = node.rules(netns);
    const planned = weakenRecord();
    const report = await sweep(options("redirect"), fakeSweepIo(node).io);
    expect(report.pods[0]).toMatchObject({ status: "drifted", action: "redirect", result: "done" });
    expect(node.rules(netns)).toEqual(before);
    expect([...node.records.values()].map((record) => record.plans)).toEqual([planned]);
    expect((await sweep(options(undefined), fakeSweepIo(node).io)).pods[0]!.status).toBe("protected");
  });
});

describe("a sweep, after what ADD read changed", () => {
  let node: FakeNode;
  const { addedPod } = sweepScene(() => node);

  beforeEach(() => {
    node = new FakeNode();
  });

  it("calls a pod whose netns holds the plan ADD recorded protected, saying it keeps its start's settings; no repair rewrites them", async () => {
    const { pod, netns } = await addedPod("checkout", { annotations: { "config.linkerd.io/skip-inbound-ports": "9090" } });
    const before = node.rules(netns);
    // Its annotation changed since (for the proxy, only a restart would take it).
    node.addPod({ ...pod, metadata: { ...pod.metadata, annotations: {} } });
    for (const policy of [undefined, "redirect"] as const) {
      const report = await sweep(options(policy), fakeSweepIo(node).io);
      expect(report.pods).toEqual([expect.objectContaining({ name: "checkout", status: "protected", details: [asAdded] })]);
      expect(report.pods[0]!.action).toBeUndefined();
    }
    expect(node.rules(netns)).toEqual(before);
  });
});

describe("recordDrift", () => {
  const plan = (family: "ipv4" | "ipv6", rules: string[][]): RulePlan => ({ family, chains: { C: rules }, jumps: [] });
  it("says per family which lines the record has and lacks; nothing for the same plans in another order", () => {
    const pods = [plan("ipv4", [["-j", "A"]]), plan("ipv6", [["-j", "A"]])];
    expect(recordDrift([pods[1]!, pods[0]!], pods)).toEqual([]);
    expect(recordDrift([plan("ipv4", [["-j", "B"]])], pods)).toEqual([
      "its ADD record's ipv4 plan has -A C -j B",
      "its ADD record's ipv4 plan lacks -A C -j A",
      "its ADD record's ipv6 plan lacks -A C -j A",
    ]);
  });
});
