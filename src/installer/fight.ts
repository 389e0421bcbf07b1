/**
 * Tells a primary CNI rewriting its config now and then from another agent that keeps
 * removing our entry (Cilium with cni.exclusive, say): re-chains of one file at machine
 * speed. Pure; the caller passes the time.
 */

/** Re-chains of one file within the window that make a fight. */
export const fightWindowMs = 10_000;
export const fightThreshold = 20;
/**
 * A back-off's longest: while it holds, a pod can start on the node without its redirect
 * (the file lacks the entry), and the fight may have ended (the other agent stopped, or was
 * told to leave the dir alone). At 60 s a meshed pod started after Cilium's writer stopped
 * ran 31 s unredirected on the real node before the sweep repaired it; at 8 s a fight that
 * never ends costs a rewrite of the file each way every 8 s.
 */
export const maxBackoffMs = 8000;

export interface FightState {
  /** Recent re-chain times per file. */
  readonly rechains: ReadonlyMap<string, readonly number[]>;
  readonly backoffMs: number;
  /** No re-chain of `file` before this time. */
  readonly until: number;
  /** The file fought over: another file (the primary's own config back, say) is chained at once. */
  readonly file?: string;
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
 * that starts again within a window of the last back-off's end doubles it, up to 8 s. Only
 * the file fought over is held.
 */
export function noteRechain(state: FightState, name: string, now: number): FightVerdict {
  if (now < state.until && name === state.file) return { state, holdMs: state.until - now };
  const recent = [...(state.rechains.get(name) ?? []), now].filter((time) => now - time < fightWindowMs);
  const rechains = new Map(state.rechains);
  if (recent.length < fightThreshold) {
    rechains.set(name, recent);
    return { state: { ...state, rechains } };
  }
  const continuing = state.backoffMs > 0 && now - state.until < fightWindowMs;
  const backoffMs = continuing ? Math.min(maxBackoffMs, state.backoffMs * 2) : 1000;
  rechains.set(name, []);
  const held = { rechains, backoffMs, until: now + backoffMs, file: name };
  return { state: held, holdMs: backoffMs, started: { rechains: recent.length, backoffMs } };
}
