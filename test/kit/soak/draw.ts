// The soak's randomness and arithmetic, pure: faults drawn from a seed (the same seed, the
// same faults in the same order, so any run replays), and recovery times summarized.

/** Every fault the soak draws from; each is one of the field's failures (test/kit/soak/faults.ts). */
export const faultKinds = [
  "apiserver-killed",
  "apiserver-frozen",
  "etcd-restarted",
  "etcd-compacted",
  "agent-pod-deleted",
  "agent-pod-force-deleted",
  "agent-container-killed",
  "kubelet-restarted",
  "containerd-restarted",
  "power-cut",
  "primary-installer-ran",
  "config-sorting-first",
  "plugin-binary-removed",
  "startup-taint-readded",
  "signing-key-rotated",
  "signing-key-dropped",
  "daemonset-rolled",
  "backend-switched",
  "annotation-flipped",
  "plugin-token-expired",
] as const;
export type FaultKind = (typeof faultKinds)[number];

/**
 * How often a kind is drawn beside the others (1 unless said): the plugin's token outliving
 * its agent waits out the token's life (up to its 10 minutes and the API's minute of leeway),
 * as long as a dozen other faults.
 */
export const faultWeights: Partial<Record<FaultKind, number>> = { "plugin-token-expired": 0.1 };
const weightOf = (kind: FaultKind) => faultWeights[kind] ?? 1;

/** A seeded generator of numbers in [0, 1) (mulberry32): small, fast, and the same everywhere. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The kinds the short soak in `npm test` draws: all but the plugin token's expiry, whose wait (10 minutes and more) is past what CI spends. */
export const shortSoakKinds: readonly FaultKind[] = faultKinds.filter((kind) => kind !== "plugin-token-expired");

/** What a soak run draws from: the test and `npm run soak` both take one, so either replays the other's run. */
export interface SoakDraw {
  seed: number;
  faults: number;
  kinds: readonly FaultKind[];
}

/**
 * A run's faults and the generator of everything drawn while they run (each fault's
 * parameters, the pause after it). Two streams of one seed: the kinds are drawn first, so
 * apart the first K faults of a run of N are a run of K, parameters and all.
 */
export function drawSoak({ seed, faults, kinds }: SoakDraw): { drawn: FaultKind[]; random: () => number } {
  return { drawn: drawFaults(seededRandom(seed), faults, kinds), random: seededRandom(seed ^ 0x5eed5eed) };
}

/** The command that replays the first `faults` faults of a draw. */
export function replayCommand({ seed, kinds }: SoakDraw, faults: number): string {
  const left = faultKinds.filter((kind) => !kinds.includes(kind));
  const chosen = left.length === 0 ? [] : left.length < kinds.length ? ["--except", left.join(",")] : ["--only", kinds.join(",")];
  return ["npm run soak --", "--seed", String(seed), "--faults", String(faults), ...chosen].join(" ");
}

/** `count` faults drawn from `kinds` with `random`: one at a time, each kind as likely as its weight says. */
export function drawFaults(random: () => number, count: number, kinds: readonly FaultKind[] = faultKinds): FaultKind[] {
  const total = kinds.reduce((sum, kind) => sum + weightOf(kind), 0);
  return Array.from({ length: count }, () => {
    const at = random() * total;
    let below = 0;
    for (const kind of kinds) {
      below += weightOf(kind);
      if (at < below) return kind;
    }
    return kinds.at(-1)!;
  });
}

/** An integer in [low, high], drawn with `random`. */
export const between = (random: () => number, low: number, high: number) => low + Math.floor(random() * (high - low + 1));

export interface Recovery {
  kind: FaultKind;
  /** From the fault's end to every pod Ready and the agent chained and ready. */
  ms: number;
}

export interface RecoverySummary {
  kind: FaultKind;
  count: number;
  p50: number;
  p99: number;
  max: number;
}

/** Recovery times by kind, in seconds (nearest-rank percentiles), in the order kinds are listed. */
export function summarizeRecoveries(recoveries: Recovery[]): RecoverySummary[] {
  return faultKinds.flatMap((kind) => {
    const sorted = recoveries
      .filter((recovery) => recovery.kind === kind)
      .map((recovery) => recovery.ms / 1000)
      .sort((a, b) => a - b);
    if (sorted.length === 0) return [];
    const at = (p: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]! * 10) / 10;
    return [{ kind, count: sorted.length, p50: at(0.5), p99: at(0.99), max: at(1) }];
  });
}
