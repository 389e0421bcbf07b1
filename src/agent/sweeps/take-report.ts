import type { PodStatus } from "../../audit/classify.js";
import type { SweepReport } from "../../audit/contract.js";
import { resultKind } from "../../audit/repair.js";
import type { Logger, SaidOnce } from "../../log.js";
import { formatPodKey } from "../../pod-key.js";
import type { SweepMemory, UnprotectedPod } from "./sweep-memory.js";

export interface MonitorMetrics {
  /** The node's meshed pods by status, as the last sweeps found them, and those left unprotected. */
  statuses(counts: Record<PodStatus, number>, unprotected: UnprotectedPod[]): void;
  repaired(action: string, result: string): void;
  /** A protected pod's redirect moved to the node's backend (done), or not (failed). */
  moved(from: string, to: string, result: "done" | "failed"): void;
  recordsRemoved(reason: string, count: number): void;
  /** Where the node's redirects are, after a sweep of every pod. */
  backends(backends: SweepReport["backends"]): void;
  audited(seconds: number): void;
  /** A full sweep answered without its process: nothing moved since the last clean one (unchanged.ts). */
  unchanged(): void;
}

/** What a sweep's report is taken into: the memory across sweeps, the metrics, the log. */
export interface ReportTaker {
  memory: SweepMemory;
  metrics: MonitorMetrics;
  log: Logger;
  /** Pods and reasons warned of once. */
  unconfirmedSaid: SaidOnce;
  /** Sweeps a pod again after `ms`. */
  later(pod: string, ms: number): void;
}

/** Takes in a sweep's report: the memory and metrics, and a line for what was found or done. */
export function takeReport(report: SweepReport, batch: Map<string, number> | undefined, to: ReportTaker): void {
  const { memory, metrics, log, unconfirmedSaid } = to;
  metrics.statuses(memory.learn(report, batch === undefined, Date.now()), memory.unprotected());
  for (const [reason, count] of Object.entries(report.recordsRemoved)) if (count > 0) metrics.recordsRemoved(reason, count);
  if (batch === undefined) metrics.backends(report.backends);
  for (const pod of report.pods) {
    const changedAt = batch?.get(formatPodKey(pod));
    const fields = { pod: formatPodKey(pod), status: pod.status, details: pod.details };
    if (pod.status === "adopted")
      log.info("adopted a pod whose redirect was set up without meshcni (recorded now)", { pod: formatPodKey(pod) });
    // Left alone (recently acted on, excluded…): the gauge shows it; the log would repeat it every sweep. Warned of once per pod
    // and reason: a netns the runtime does not confirm as the pod's (a record forged through a hostPath, or no runtime to ask).
    const warned = pod.unconfirmed !== undefined && unconfirmedSaid.first(`${pod.uid} ${pod.unconfirmed}`);
    if (pod.skipped) log[warned ? "warn" : "debug"]("leaving an unprotected pod alone", { ...fields, reason: pod.skipped });
    if (pod.moved) {
      const { from, to, failed } = pod.moved;
      metrics.moved(from, to, failed === undefined ? "done" : "failed");
      if (failed === undefined) log.info("moved a pod's redirect to the node's backend", { pod: formatPodKey(pod), from, to });
      else log.warn("could not move a pod's redirect to the node's backend", { pod: formatPodKey(pod), from, to, failed });
    }
    if (!pod.action) continue;
    const result = resultKind(pod.result);
    metrics.repaired(pod.action, result);
    // Throttled: swept again once the server's wait is over.
    if (typeof pod.result === "object" && "throttledMs" in pod.result) to.later(formatPodKey(pod), pod.result.throttledMs);
    // A blocked eviction is retried at every sweep: warned of once, until it is no longer blocked.
    const repeated = memory.blockedAgain(pod.uid, formatPodKey(pod), result === "blocked");
    log[repeated ? "debug" : "warn"]("meshed pod without its redirect", {
      ...fields,
      action: pod.action,
      result: pod.result,
      ...(changedAt === undefined ? {} : { detectedMs: Math.round(performance.now() - changedAt) }),
    });
  }
}
