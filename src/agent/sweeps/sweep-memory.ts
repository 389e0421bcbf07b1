import { type PodStatus, podStatuses } from "../../audit/classify.js";
import type { SweepReport, SweepRequest } from "../../audit/contract.js";
import type { RepairResult } from "../../audit/repair.js";
import type { PodKey } from "../../pod-key.js";

/** A meshed pod the last sweep of it left without its redirect (missing or drifted, not redirected in place). */
export interface UnprotectedPod extends PodKey {
  status: "missing" | "drifted";
}

/** How often a sweep asks the container runtime for its sandboxes. */
export const sandboxCheckMs = 10 * 60_000;

/** A pod acted on is left alone this long, so a repair that does not hold is not repeated at every sweep. */
export const actedMemoryMs = 10 * 60_000;

/**
 * Until when a pod acted on is left alone: a blocked eviction is retried at the next sweep
 * (undefined), a throttled action once the server's wait is over, one refused for good
 * never, anything else after actedMemoryMs.
 */
function leaveAloneUntil(result: RepairResult | undefined, now: number): number | undefined {
  if (result === "blocked") return undefined;
  if (typeof result === "object" && "throttledMs" in result) return now + result.throttledMs;
  if (typeof result === "object" && result.permanent) return Number.POSITIVE_INFINITY;
  return now + actedMemoryMs;
}

/** What the agent remembers across sweeps: pods acted on, evictions made. Pure but for the clock passed in. */
export class SweepMemory {
  /** Pods a sweep leaves alone, until when. */
  private readonly leftAlone = new Map<string, number>();
  private evictions: number[] = [];
  private readonly statuses = new Map<string, { status: PodStatus; unprotected: UnprotectedPod | undefined }>();
  /** Pods whose eviction a PodDisruptionBudget blocked at the last sweep: their keys (namespace/name) by UID. */
  private readonly blocked = new Map<string, string>();
  /** Each pod's netns as its last sweep read it clean, by UID: handed back, so an unchanged netns is not read again. */
  private readonly seen = new Map<string, NonNullable<SweepReport["pods"][number]["seen"]>>();
  private sandboxesAskedAt: number | undefined;

  constructor(private readonly maxEvictionsPerMinute: number) {}

  /** The UIDs a sweep must leave alone, and how many evictions it may make. */
  limits(now: number): { skipUids: string[]; evictionsLeft: number; retryMinutes: number } {
    for (const [uid, until] of this.leftAlone) if (until <= now) this.leftAlone.delete(uid);
    this.evictions = this.evictions.filter((at) => now - at < 60_000);
    const evictionsLeft = Math.max(0, this.maxEvictionsPerMinute - this.evictions.length);
    return { skipUids: [...this.leftAlone.keys()], evictionsLeft, retryMinutes: actedMemoryMs / 60_000 };
  }

  /** Takes in a sweep's report (of every pod when `full`); returns the node's counts by status. */
  learn(report: SweepReport, full: boolean, now: number): Record<PodStatus, number> {
    if (full) {
      this.statuses.clear();
      this.seen.clear();
    }
    for (const pod of report.pods) {
      if (pod.seen) this.seen.set(pod.uid, pod.seen);
      else this.seen.delete(pod.uid);
      const repairedInPlace = pod.action === "redirect" && pod.result === "done";
      const unprotected =
        (pod.status === "missing" || pod.status === "drifted") && !repairedInPlace
          ? { namespace: pod.namespace, name: pod.name, status: pod.status }
          : undefined;
      this.statuses.set(pod.uid, { status: pod.status, unprotected });
      const until = pod.action && leaveAloneUntil(pod.result, now);
      if (until) this.leftAlone.set(pod.uid, until);
      if (pod.action === "evict" && pod.result === "done") this.evictions.push(now);
    }
    return this.counts();
  }

  /** The node's meshed pods by status, as the sweeps (and the agent's own ADDs) left them. */
  counts(): Record<PodStatus, number> {
    const counts = Object.fromEntries(podStatuses.map((status) => [status, 0])) as Record<PodStatus, number>;
    for (const { status } of this.statuses.values()) counts[status]++;
    return counts;
  }

  /**
   * A pod no sweep has judged yet whose redirect the agent's writer put in place: protected
   * (its plan, as recorded) until a sweep reads it. True when that changed the counts.
   */
  written(uid: string): boolean {
    if (this.statuses.has(uid)) return false;
    this.statuses.set(uid, { status: "protected", unprotected: undefined });
    return true;
  }

  /**
   * What the next sweep is handed: the pods' netns as their last sweeps read them clean, and
   * whether it asks the runtime for its sandboxes (every sandboxCheckMs: the records of
   * sandboxes gone are the rare leftovers of a runtime that never calls CNI GC).
   */
  carried(now: number): { seen: NonNullable<SweepRequest["seen"]>; sandboxes: boolean } {
    const sandboxes = this.sandboxesAskedAt === undefined || now - this.sandboxesAskedAt >= sandboxCheckMs;
    if (sandboxes) this.sandboxesAskedAt = now;
    return { seen: [...this.seen].map(([uid, seen]) => ({ uid, ...seen })), sandboxes };
  }

  /** The node's meshed pods left unprotected, as their last sweeps found and left them. */
  unprotected(): UnprotectedPod[] {
    return [...this.statuses.values()].flatMap(({ unprotected }) => unprotected ?? []);
  }

  /** Notes a pod's eviction blocked or not; true when it was blocked already (warned of once, until it is not). */
  blockedAgain(uid: string, key: string, blocked: boolean): boolean {
    const again = blocked && this.blocked.has(uid);
    if (blocked) this.blocked.set(uid, key);
    else this.blocked.delete(uid);
    return again;
  }

  /** The pods (namespace/name) whose eviction is blocked: any change on the node may have freed their budget. */
  blockedPods(): string[] {
    return [...this.blocked.values()];
  }

  /** A pod gone from the node: nothing about it is kept (a refusal for good included). */
  forget(uid: string): void {
    this.statuses.delete(uid);
    this.blocked.delete(uid);
    this.leftAlone.delete(uid);
    this.seen.delete(uid);
  }
}
