import { describe, expect, it } from "vitest";
import { BlockingBudget } from "../../../../src/agent/socket/peer.js";

describe("the event loop's budget for blocking waits on callers", () => {
  it("runs waits while the second's budget has room, counts their time, and starts afresh each second", () => {
    let now = 0;
    const budget = new BlockingBudget(2, () => now);
    const waits: number[] = [];
    const waitFor = (ms: number) => () => {
      waits.push(ms);
      now += ms;
    };
    expect(budget.spend(waitFor(1))).toBe(true);
    expect(budget.spend(waitFor(1))).toBe(true);
    // 2 ms spent within this second: the next is not run.
    expect(budget.spend(waitFor(1))).toBe(false);
    expect(waits).toEqual([1, 1]);
    now = 999;
    expect(budget.spend(waitFor(1))).toBe(false);
    now = 1000;
    expect(budget.spend(waitFor(1))).toBe(true);
    expect(waits).toEqual([1, 1, 1]);
  });
});
