import { describe, expect, it } from "vitest";
import { sleep, withBackground } from "../../kit/common.js";

describe("withBackground", () => {
  it("repeats each loop beside the work, ends one whose round says false, and answers what the work returns", async () => {
    const rounds = { sampler: 0, bounded: 0 };
    const result = await withBackground(
      [
        { everyMs: 1, round: async () => Boolean(++rounds.sampler) },
        { everyMs: 1, round: async () => ++rounds.bounded < 3 },
      ],
      async () => {
        await sleep(50);
        return "done";
      },
    );
    expect(result).toBe("done");
    expect(rounds.sampler).toBeGreaterThan(3);
    expect(rounds.bounded).toBe(3);
  });

  it("stops the loops when the work fails, after the round under way, and passes the failure on", async () => {
    let rounds = 0;
    let inRound = false;
    const failing = withBackground(
      [
        {
          everyMs: 1,
          round: async () => {
            inRound = true;
            await sleep(20);
            inRound = false;
            return Boolean(++rounds);
          },
        },
      ],
      async () => {
        await sleep(30);
        throw new Error("the work failed");
      },
    );
    await expect(failing).rejects.toThrow("the work failed");
    expect(inRound).toBe(false);
    const after = rounds;
    await sleep(50);
    expect(rounds).toBe(after);
  });
});
