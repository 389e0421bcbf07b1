import { describe, expect, it } from "vitest";
import {
  between,
  drawFaults,
  drawSoak,
  faultKinds,
  faultWeights,
  replayCommand,
  seededRandom,
  shortSoakKinds,
  summarizeRecoveries,
} from "../../kit/soak/draw.js";
import { fixedDraws } from "../../kit/soak/seeds.js";

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

  it("a run of K faults is the first K of a run of N from the same seed: kinds and parameters alike", () => {
    const long = drawSoak({ seed: 760103437, faults: 20, kinds: shortSoakKinds });
    const short = drawSoak({ seed: 760103437, faults: 2, kinds: shortSoakKinds });
    expect(short.drawn).toEqual(long.drawn.slice(0, 2));
    expect(short.drawn).toEqual(["apiserver-killed", "backend-switched"]);
    const parameters = (random: () => number) => Array.from({ length: 10 }, () => between(random, 1000, 8000));
    expect(parameters(short.random)).toEqual(parameters(long.random));
  });

  it("prints the command that makes the same draw: --except for a few kinds left out, --only for a few chosen", () => {
    const draw = { seed: 760103437, faults: 20, kinds: shortSoakKinds };
    expect(replayCommand(draw, 2)).toBe("npm run soak -- --seed 760103437 --faults 2 --except plugin-token-expired");
    expect(replayCommand({ ...draw, kinds: faultKinds }, 5)).toBe("npm run soak -- --seed 760103437 --faults 5");
    const pair = ["apiserver-killed", "backend-switched"] as const;
    expect(replayCommand({ ...draw, kinds: pair }, 3)).toBe(
      "npm run soak -- --seed 760103437 --faults 3 --only apiserver-killed,backend-switched",
    );
  });

  it("CI's fixed draws leave out only the plugin token's expiry (past CI's time), and no two repeat a seed", () => {
    for (const draw of fixedDraws) expect(draw.kinds).toEqual(faultKinds.filter((kind) => kind !== "plugin-token-expired"));
    expect(new Set(fixedDraws.map((draw) => draw.seed)).size).toBe(fixedDraws.length);
  });

  it("summarizes recovery times by kind in seconds, nearest-rank, in the kinds' order", () => {
    const recoveries = [1000, 2000, 3000, 4000].map((ms) => ({ kind: "power-cut" as const, ms }));
    expect(summarizeRecoveries([...recoveries, { kind: "apiserver-killed", ms: 1500 }])).toEqual([
      { kind: "apiserver-killed", count: 1, p50: 1.5, p99: 1.5, max: 1.5 },
      { kind: "power-cut", count: 4, p50: 2, p99: 4, max: 4 },
    ]);
  });
});
