import { describe, expect, it } from "vitest";
import { fightThreshold, fightWindowMs, maxBackoffMs, noFight, noteRechain } from "../../../src/installer/fight.js";

/** Re-chains `count` times, `gapMs` apart from `start`; returns the last verdict. */
function rechains(count: number, gapMs: number, start = 0, state = noFight) {
  let verdict = noteRechain(state, "05-cilium.conflist", start);
  for (let i = 1; i < count; i++) verdict = noteRechain(verdict.state, "05-cilium.conflist", start + i * gapMs);
  return verdict;
}

describe("fight detection", () => {
  it("lets a primary CNI's occasional rewrites through", () => {
    const verdict = rechains(100, 1000);
    expect(verdict.holdMs).toBeUndefined();
  });

  it(`backs off 1 s once ${fightThreshold} re-chains fall within ${fightWindowMs / 1000} s, then holds until it ends`, () => {
    expect(rechains(fightThreshold - 1, 10).holdMs).toBeUndefined();
    const started = rechains(fightThreshold, 10);
    expect(started).toMatchObject({ holdMs: 1000, started: { rechains: fightThreshold, backoffMs: 1000 } });
    const during = noteRechain(started.state, "05-cilium.conflist", 190 + 400);
    expect(during).toMatchObject({ holdMs: 600 });
    expect(during.started).toBeUndefined();
    expect(noteRechain(started.state, "05-cilium.conflist", 190 + 1000).holdMs).toBeUndefined();
  });

  it("doubles the back-off while the fight goes on, up to 8 s, and resets once it stops", () => {
    let state = noFight;
    let now = 0;
    const backoffs: number[] = [];
    for (let round = 0; round < 8; round++) {
      const verdict = rechains(fightThreshold, 1, now, state);
      backoffs.push(verdict.started!.backoffMs);
      state = verdict.state;
      now = state.until;
    }
    expect(backoffs).toEqual([1000, 2000, 4000, maxBackoffMs, maxBackoffMs, maxBackoffMs, maxBackoffMs, maxBackoffMs]);
    expect(maxBackoffMs).toBe(8000);
    const afterCalm = rechains(fightThreshold, 1, now + fightWindowMs, state);
    expect(afterCalm.started?.backoffMs).toBe(1000);
  });

  it("counts each file apart", () => {
    let state = noFight;
    for (let i = 0; i < fightThreshold - 1; i++) state = noteRechain(state, "a.conflist", i).state;
    expect(noteRechain(state, "b.conflist", fightThreshold).holdMs).toBeUndefined();
    expect(noteRechain(state, "a.conflist", fightThreshold).holdMs).toBe(1000);
  });

  it("holds only the file fought over: another file (the primary's own config restored) is chained at once", () => {
    const fought = rechains(fightThreshold, 1);
    expect(fought.holdMs).toBe(1000);
    expect(noteRechain(fought.state, "05-cilium.conflist", 500).holdMs).toBe(1000 - 500 + fightThreshold - 1);
    expect(noteRechain(fought.state, "10-calico.conflist", 500).holdMs).toBeUndefined();
  });
});
