import { describe, expect, it } from "vitest";
import { actedMemoryMs, SweepMemory, sandboxCheckMs } from "../../../../src/agent/sweeps/sweep-memory.js";
import type { PodReport, SweepReport } from "../../../../src/audit/contract.js";

const report = (pods: Array<Partial<PodReport> & { uid: string }>): SweepReport => ({
  node: "n1",
  pods: pods.map((pod) => ({ namespace: "shop", name: pod.uid, status: "missing", details: [], ...pod })),
  summary: { protected: 0, adopted: 0, missing: 0, drifted: 0, unknown: 0 },
  recordsRemoved: { podGone: 0, netnsGone: 0, sandboxGone: 0 },
  backends: { records: {} },
});

describe("what the agent remembers across sweeps", () => {
  it("leaves a pod acted on alone for a while, but retries a blocked eviction", () => {
    const memory = new SweepMemory(2);
    memory.learn(
      report([
        { uid: "a", action: "redirect", result: "done" },
        { uid: "b", action: "evict", result: "blocked" },
      ]),
      true,
      0,
    );
    expect(memory.limits(1000).skipUids).toEqual(["a"]);
    expect(memory.limits(actedMemoryMs).skipUids).toEqual([]);
  });

  it("never retries an eviction refused for good, a throttled one once the server's wait is over; forgets both with the pod", () => {
    const memory = new SweepMemory(2);
    memory.learn(
      report([
        { uid: "split", action: "evict", result: { failed: "several budgets", permanent: true } },
        { uid: "slow", action: "evict", result: { throttledMs: 2000 } },
        { uid: "flaky", action: "evict", result: { failed: "connection reset" } },
      ]),
      true,
      0,
    );
    expect(memory.limits(1000).skipUids.sort()).toEqual(["flaky", "slow", "split"]);
    expect(memory.limits(2000).skipUids.sort()).toEqual(["flaky", "split"]);
    expect(memory.limits(actedMemoryMs * 100).skipUids).toEqual(["split"]);
    expect(memory.limits(actedMemoryMs * 100).evictionsLeft).toBe(2);
    memory.forget("split");
    expect(memory.limits(actedMemoryMs * 100).skipUids).toEqual([]);
  });

  it("tells a blocked eviction seen again from a new one, so it is warned of once", () => {
    const memory = new SweepMemory(2);
    expect(memory.blockedAgain("b", "shop/b", true)).toBe(false);
    expect(memory.blockedAgain("b", "shop/b", true)).toBe(true);
    expect(memory.blockedAgain("b", "shop/b", false)).toBe(false);
    expect(memory.blockedAgain("b", "shop/b", true)).toBe(false);
    memory.forget("b");
    expect(memory.blockedAgain("b", "shop/b", true)).toBe(false);
  });

  it("names the pods whose eviction is blocked, until it is not or they are gone", () => {
    const memory = new SweepMemory(2);
    memory.blockedAgain("a", "shop/a", true);
    memory.blockedAgain("b", "shop/b", true);
    expect(memory.blockedPods()).toEqual(["shop/a", "shop/b"]);
    memory.blockedAgain("a", "shop/a", false);
    memory.forget("b");
    expect(memory.blockedPods()).toEqual([]);
  });

  it("allows at most the evictions per minute", () => {
    const memory = new SweepMemory(2);
    memory.learn(report([{ uid: "a", action: "evict", result: "done" }]), false, 0);
    expect(memory.limits(10_000).evictionsLeft).toBe(1);
    memory.learn(report([{ uid: "b", action: "evict", result: "done" }]), false, 20_000);
    expect(memory.limits(30_000).evictionsLeft).toBe(0);
    expect(memory.limits(60_001).evictionsLeft).toBe(1);
    expect(memory.limits(80_001).evictionsLeft).toBe(2);
  });

  it("counts the node's pods by status: a full sweep replaces, a partial one updates, a deleted pod leaves", () => {
    const memory = new SweepMemory(2);
    expect(
      memory.learn(
        report([
          { uid: "a", status: "protected" },
          { uid: "b", status: "missing" },
        ]),
        true,
        0,
      ),
    ).toMatchObject({ protected: 1, missing: 1 });
    expect(memory.learn(report([{ uid: "b", status: "protected" }]), false, 0)).toMatchObject({ protected: 2, missing: 0 });
    memory.forget("a");
    expect(memory.learn(report([{ uid: "c", status: "drifted" }]), true, 0)).toMatchObject({ protected: 0, drifted: 1 });
  });

  it("lists the pods left unprotected: not those redirected in place, nor those gone or found protected since", () => {
    const memory = new SweepMemory(2);
    memory.learn(
      report([
        { uid: "a", name: "a", status: "missing", action: "label", result: "done" },
        { uid: "b", name: "b", status: "drifted" },
        { uid: "c", name: "c", status: "missing", action: "redirect", result: "done" },
        { uid: "d", name: "d", status: "unknown" },
      ]),
      true,
      0,
    );
    expect(memory.unprotected()).toEqual([
      { namespace: "shop", name: "a", status: "missing" },
      { namespace: "shop", name: "b", status: "drifted" },
    ]);
    memory.learn(report([{ uid: "b", name: "b", status: "protected" }]), false, 0);
    memory.forget("a");
    expect(memory.unprotected()).toEqual([]);
  });

  it("hands back each pod's netns as its last sweep read it clean; drops it when a sweep did not, on a full sweep without it, and with the pod", () => {
    const memory = new SweepMemory(2);
    const seen = (generation: number) => ({ netns: "0:9", generation, plans: "digest", hasRedirect: true });
    memory.learn(
      report([
        { uid: "a", status: "protected", seen: seen(3) },
        { uid: "b", status: "protected", seen: seen(4) },
        { uid: "c", status: "protected", seen: seen(5) },
      ]),
      true,
      0,
    );
    expect(memory.carried(0).seen.map(({ uid, generation }) => [uid, generation])).toEqual([
      ["a", 3],
      ["b", 4],
      ["c", 5],
    ]);
    // A sweep of one pod that read it with differences: that reading is gone, the others stay.
    memory.learn(report([{ uid: "a", status: "drifted" }]), false, 0);
    expect(memory.carried(0).seen.map(({ uid }) => uid)).toEqual(["b", "c"]);
    memory.forget("b");
    expect(memory.carried(0).seen.map(({ uid }) => uid)).toEqual(["c"]);
    // A full sweep that no longer lists c (gone from the node) keeps nothing of it.
    memory.learn(report([{ uid: "d", status: "protected", seen: seen(6) }]), true, 0);
    expect(memory.carried(0).seen).toEqual([{ uid: "d", ...seen(6) }]);
  });

  it("has a sweep ask the runtime for its sandboxes at first, then once every 10 minutes", () => {
    const memory = new SweepMemory(2);
    const asked = [0, 1000, sandboxCheckMs - 1, sandboxCheckMs, sandboxCheckMs + 1].map((at) => memory.carried(at).sandboxes);
    expect(asked).toEqual([true, false, false, true, false]);
  });
});
