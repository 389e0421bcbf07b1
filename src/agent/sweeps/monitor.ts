import type { V1Pod } from "@kubernetes/client-node";
import { podsToAudit } from "../../audit/classify.js";
import type { SweepRequest } from "../../audit/contract.js";
import { hostPaths } from "../../host.js";
import { type Logger, SaidOnce, StandingProblems } from "../../log.js";
import { podName } from "../../pod-key.js";
import type { MonitorOptions } from "./options.js";
import { runSweepChild } from "./sweep-child.js";
import { SweepMemory } from "./sweep-memory.js";
import { type MonitorMetrics, takeReport } from "./take-report.js";
import { CleanSweeps } from "./unchanged.js";

/** Events close together make one sweep: never two within this (a new pod is still judged within seconds of running). */
const sweepFloorMs = 2000;
/** How long the first sweep waits for the agent's caches. */
const firstSweepWaitMs = 5000;

/**
 * The agent's side of the audit: on every change to a meshed pod of the node (the agent's
 * watch calls changed()), and every auditSeconds for all of them, runs `meshcni sweep` as
 * a child process (so entering pod netns never moves the agent's own thread, whose
 * sockets must stay in the host netns), the request and its credentials on stdin. The
 * child acts and emits the Events; the agent keeps what must outlive one sweep (pods
 * acted on, the eviction rate) and the metrics.
 */
export class AuditMonitor {
  private readonly pending = new Map<string, number>();
  private readonly memory: SweepMemory;
  private full = false;
  private running = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private lastSweepAt = Number.NEGATIVE_INFINITY;
  private readonly stopping = new AbortController();
  private draining: Promise<void> | undefined;
  private readonly retries = new Set<NodeJS.Timeout>();
  private readonly problems: StandingProblems;
  private readonly unconfirmedSaid = new SaidOnce(1000);
  private readonly clean: CleanSweeps;

  constructor(
    private readonly options: MonitorOptions,
    private readonly log: Logger,
    private readonly metrics: MonitorMetrics,
    /** Runs one sweep (`meshcni sweep` as a child process; tests pass their own). */
    private readonly runSweep: typeof runSweepChild = runSweepChild,
  ) {
    this.memory = new SweepMemory(options.sweep.maxEvictionsPerMinute);
    this.problems = new StandingProblems(log);
    this.clean = new CleanSweeps(hostPaths(options.dirs.hostRoot)(options.dirs.stateDir), options.dirs.netnsDirs, options.look);
  }

  /**
   * Starts sweeping: every pod now (once the agent's caches hold the node, a few seconds at
   * most, so the sweep need not list it itself) and every auditSeconds; changes come in
   * through changed() and removed().
   */
  start(): void {
    this.timer ??= setInterval(() => this.sweepAll(), this.options.sweep.auditSeconds * 1000);
    const started = performance.now();
    const first = () => {
      if (this.stopped) return;
      if (this.options.holdsNode() || performance.now() - started > firstSweepWaitMs) this.sweepAll();
      else setTimeout(first, 50);
    };
    first();
  }

  /** A pod of the node changed (the agent's watch): a meshed one is swept soon, unless it is as the agent's own ADD wrote it. */
  changed(pod: V1Pod): void {
    // A pod being deleted is not judged at its every change: the next full sweep reports it.
    if (podsToAudit([pod]).length === 0 || pod.metadata?.deletionTimestamp) return;
    const now = performance.now();
    if (!this.options.written?.covers(pod)) this.pending.set(podName(pod), now);
    // Counted as protected until a sweep reads it (the next full one).
    else if (this.memory.written(pod.metadata?.uid ?? "")) this.metrics.statuses(this.memory.counts(), this.memory.unprotected());
    // A replacement becoming ready may be what a PodDisruptionBudget waited for: blocked evictions are tried again with it.
    for (const blocked of this.memory.blockedPods()) if (!this.pending.has(blocked)) this.pending.set(blocked, now);
    this.kick();
  }

  removed = (pod: V1Pod): void => this.memory.forget(pod.metadata?.uid ?? "");

  /** Stops sweeping: a sweep child still running is killed, and awaited, so none writes to the host after the stop. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    for (const retry of this.retries) clearTimeout(retry);
    this.stopping.abort();
    await this.draining?.catch(() => undefined);
  }

  /** Every pod swept soon (the entry changed). */
  sweepAll(): void {
    this.full = true;
    this.kick();
  }

  private kick(): void {
    if (this.running) return;
    this.running = true;
    this.draining = this.drain().finally(() => {
      this.running = false;
      if (!this.stopped && (this.full || this.pending.size > 0)) this.kick();
    });
  }

  private async drain(): Promise<void> {
    while (!this.stopped && (this.full || this.pending.size > 0)) {
      const wait = this.lastSweepAt + sweepFloorMs - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      if (this.stopped) return;
      const batch = this.full ? undefined : new Map(this.pending);
      this.full = false;
      this.pending.clear();
      this.lastSweepAt = performance.now();
      await this.sweep(batch);
    }
  }

  /** One sweep, of the changed pods or (no batch) of all; what it did is logged and counted. */
  private async sweep(batch: Map<string, number> | undefined): Promise<void> {
    const started = performance.now();
    const { node, self, dirs, sweep, credentials, view } = this.options;
    const entry = this.options.entry();
    const kubeconfig = credentials();
    if (kubeconfig === undefined) {
      this.problems.set("audit", "the audit waits for the agent's credentials", { level: "error" });
      return;
    }
    const request: SweepRequest = {
      node,
      pods: [...(batch?.keys() ?? [])],
      policy: sweep.repair,
      limits: { excludeNamespaces: sweep.excludeNamespaces, evictNamespaces: sweep.evictNamespaces, ...this.memory.limits(Date.now()) },
      ...this.memory.carried(Date.now()),
      ...(self ? { self } : {}),
      ...withView(await view()),
      dirs,
      ...(entry ? { entry } : {}),
    };
    // A sweep of changed pods may change what the next full one would find: that one runs.
    if (batch) this.clean.forget();
    const checked = batch ? undefined : await this.clean.check(request, this.stopping.signal);
    if (this.stopped) return;
    const unchanged = checked !== undefined && "unchanged" in checked;
    this.log.debug("sweep", {
      pods: batch ? [...batch.keys()] : "all",
      seen: request.seen?.length,
      sandboxes: request.sandboxes,
      unchanged,
    });
    const outcome = unchanged
      ? undefined
      : await this.runSweep(this.options.binary, { kubeconfig, request }, undefined, this.stopping.signal);
    if (this.stopped) return;
    this.metrics.audited((performance.now() - started) / 1000);
    if (!outcome) return this.metrics.unchanged();
    if ("problem" in outcome) {
      const { problem, exitCode } = outcome;
      this.problems.set("audit", `${problem}; trying again at the next change or every ${sweep.auditSeconds} s`, {
        level: "error",
        ...(exitCode === undefined ? {} : { fields: { exitCode } }),
      });
      return;
    }
    this.problems.set("audit", undefined);
    if (checked && "key" in checked) this.clean.took(checked.key, request, outcome.report);
    const { memory, metrics, log, unconfirmedSaid } = this;
    takeReport(outcome.report, batch, { memory, metrics, log, unconfirmedSaid, later: (pod, ms) => this.later(pod, ms) });
  }

  /** Sweeps a pod again after `ms` (with the other pods due then), a little after, as timers may fire early. */
  private later(pod: string, ms: number): void {
    const timer = setTimeout(() => {
      this.retries.delete(timer);
      this.pending.set(pod, performance.now());
      this.kick();
    }, ms + 50);
    this.retries.add(timer);
  }
}

const withView = (view: SweepRequest["view"]) => (view ? { view } : {});

/** The sweeps' one start: a monitor sweeping from now on (every pod once the caches hold the node, then every auditSeconds and at each change). */
export function startSweeps(options: MonitorOptions, log: Logger, metrics: MonitorMetrics): AuditMonitor {
  const monitor = new AuditMonitor(options, log, metrics);
  monitor.start();
  return monitor;
}
