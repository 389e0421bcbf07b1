import { describe, expect, it } from "vitest";
import { between, drawFaults, faultKinds, faultWeights, seededRandom, summarizeRecoveries } from "../../kit/soak/draw.js";

describe("the soak's draw", () => {
  it("draws the same faults, in the same order, from the same seed, and others from another", () => {
    const draw = (seed: number) => drawFaults(seededRandom(seed), 50);
    expect(draw(42)).toEqual(draw(42));
    expect(draw(42)).not.toEqual(draw(43));
  });

  it("draws every kind over many faults, each as often as its weight says", () => {
    const weight = (kind: (typeof faultKinds)[number]) => faultWeights[kind] ?? 1;
    const drawn = drawFaults(seededRandom(7), 1000 * faultKinds.reduce((sum, kind) => sum + weight(kind), 0));
    for (const kind of faultKinds) {
      const perWeight = drawn.filter((fault) => fault === kind).length / weight(kind);
      expect(perWeight, kind).toBeGreaterThan(800);
      expect(perWeight, kind).toBeLessThan(1200);
    }
    expect(drawn.filter((fault) => fault === "plugin-token-expired").length).toBeLessThan(150);
  });

  it("draws only the kinds asked for, and numbers within the bounds given, both ends reached", () => {
    const random = seededRandom(1);
    expect(new Set(drawFaults(random, 100, ["etcd-compacted", "power-cut"]))).toEqual(new Set(["etcd-compacted", "power-cut"]));
    const numbers = Array.from({ length: 1000 }, () => between(random, 3, 5));
    expect(new Set(numbers)).toEqual(new Set([3, 4, 5]));
  });

  it("summarizes recovery times by kind in seconds, nearest-rank, in the kinds' order", () => {
    const recoveries = [1000, 2000, 3000, 4000].map((ms) => ({ kind: "power-cut" as const, ms }));
    expect(summarizeRecoveries([...recoveries, { kind: "apiserver-killed", ms: 1500 }])).toEqual([
      { kind: "apiserver-killed", count: 1, p50: 1.5, p99: 1.5, max: 1.5 },
      { kind: "power-cut", count: 4, p50: 2, p99: 4, max: 4 },
    ]);
  });
});
