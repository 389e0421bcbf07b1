/**
 * Tells a primary CNI rewriting its config now and then from another agent that keeps
 * removing our entry (Cilium with cni.exclusive, say): re-chains of one file at machine
 * speed. Pure; the caller passes the time.
 */

/** Re-chains of one file within the window that make a fight. */
export const fightWindowMs = 10_000;
export const fightThreshold = 20;
export const maxBackoffMs = 60_000;

export interface FightState {
  /** Recent re-chain times per file. */
  readonly rechains: ReadonlyMap<string, readonly number[]>;
  readonly backoffMs: number;
  /** No re-chain before this time. */
  readonly until: number;
}

export const noFight: FightState = { rechains: new Map(), backoffMs: 0, until: 0 };

export interface FightVerdict {
  state: FightState;
  /** Set while backing off: hold the write, try again this much later. */
  holdMs?: number;
  /** Set when this re-chain started a back-off: how many re-chains and how long to wait. */
  started?: { rechains: number; backoffMs: number };
}

/**
 * Counts a re-chain of `name` at `now`: go ahead, or hold. A fight backs off 1 s; one
 * that starts again within a window of the last back-off's end doubles it, up to 60 s.
 */
export function noteRechain(state: FightState, name: string, now: number): FightVerdict {
  if (now < state.until) return { state, holdMs: state.until - now };
  const recent = [...(state.rechains.get(name) ?? []), now].filter((time) => now - time < fightWindowMs);
  const rechains = new Map(state.rechains);
  if (recent.length < fightThreshold) {
    rechains.set(name, recent);
    return { state: { ...state, rechains } };
  }
  const continuing = state.backoffMs > 0 && now - state.until < fightWindowMs;
  const backoffMs = continuing ? Math.min(maxBackoffMs, state.backoffMs * 2) : 1000;
  rechains.set(name, []);
  return { state: { rechains, backoffMs, until: now + backoffMs }, holdMs: backoffMs, started: { rechains: recent.length, backoffMs } };
}
