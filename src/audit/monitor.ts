import type { V1Pod } from "@kubernetes/client-node";
import { execa } from "execa";
import { errorMessage } from "../errors.js";
import type { NodeApi } from "../kube/node-api.js";
import type { Logger } from "../log.js";
import { formatPodKey, type PodKey, podName } from "../pod-key.js";
import { isUnprotected, type PodAudit, podsToAudit } from "./classify.js";
import type { AuditReport } from "./format.js";
import { eventMessage, eventReason, type RepairPolicy, repairAction, unprotectedLabel } from "./repair.js";

export interface MonitorOptions {
  binary: string;
  node: string;
  kubeconfig: string;
  hostRoot: string;
  stateDir: string;
  policy: RepairPolicy;
  self: PodKey | undefined;
  auditSeconds: number;
}

export interface MonitorMetrics {
  unprotected(status: string): void;
  repaired(action: string): void;
  audited(seconds: number): void;
}

/**
 * The agent's side of the audit: on every change to a meshed pod of the node (a watch),
 * and every auditSeconds for all of them, runs `meshcni audit` as a child process (so
 * entering pod netns never moves the agent's own thread, whose sockets must stay in the
 * host netns) and, for each unprotected pod, emits an Event and repairs it by policy,
 * once per pod UID.
 */
export class AuditMonitor {
  private readonly pods = new Map<string, V1Pod>();
  private readonly pending = new Map<string, number>();
  private readonly acted = new Set<string>();
  private full = false;
  private running = false;
  private stopWatch: (() => Promise<void>) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private api: NodeApi | undefined;

  constructor(
    private readonly options: MonitorOptions,
    private readonly log: Logger,
    private readonly metrics: MonitorMetrics,
  ) {}

  /** Starts, or restarts with new credentials (a rotated token means a new client). */
  async start(api: NodeApi): Promise<void> {
    await this.stopWatch?.();
    this.api = api;
    this.pods.clear();
    this.stopWatch = await api.watchPods({
      change: (pod) => {
        this.pods.set(pod.metadata?.uid ?? "", pod);
        if (podsToAudit([pod]).length > 0 && !this.acted.has(pod.metadata?.uid ?? "")) {
          this.pending.set(podName(pod), performance.now());
          this.kick();
        }
      },
      remove: (pod) => this.pods.delete(pod.metadata?.uid ?? ""),
      error: (error) => this.log.warn("pod watch failed; restarting it", { error: errorMessage(error) }),
    });
    this.timer ??= setInterval(() => this.auditAll(), this.options.auditSeconds * 1000);
    this.auditAll();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.stopWatch?.();
    this.stopWatch = undefined;
  }

  private auditAll(): void {
    this.full = true;
    this.kick();
  }

  private kick(): void {
    if (this.running) return;
    this.running = true;
    void this.drain().finally(() => {
      this.running = false;
      if (this.full || this.pending.size > 0) this.kick();
    });
  }

  private async drain(): Promise<void> {
    while (this.full || this.pending.size > 0) {
      const batch = this.full ? undefined : new Map(this.pending);
      this.full = false;
      this.pending.clear();
      const report = await this.audit(batch ? [...batch.keys()] : []);
      for (const audit of report?.pods.filter(isUnprotected) ?? []) {
        await this.act(audit, batch?.get(formatPodKey(audit)));
      }
    }
  }

  private async audit(pods: string[]): Promise<AuditReport | undefined> {
    const started = performance.now();
    const { binary, node, kubeconfig, hostRoot, stateDir } = this.options;
    const result = await execa(
      binary,
      [
        "audit",
        "--output",
        "json",
        "--node",
        node,
        "--kubeconfig",
        kubeconfig,
        "--host-root",
        hostRoot,
        "--state-dir",
        stateDir,
        ...pods.flatMap((pod) => ["--pod", pod]),
      ],
      { reject: false },
    );
    this.metrics.audited((performance.now() - started) / 1000);
    if (result.exitCode !== 0 && result.exitCode !== 1) {
      this.log.error("audit failed", { exitCode: result.exitCode, stderr: String(result.stderr).trim() });
      return undefined;
    }
    return JSON.parse(String(result.stdout)) as AuditReport;
  }

  private async act(audit: PodAudit, changedAt: number | undefined): Promise<void> {
    const pod = this.pods.get(audit.uid);
    if (!pod || this.acted.has(audit.uid) || !this.api) return;
    const action = repairAction(pod, this.options.policy, this.options.self);
    const subject = formatPodKey(audit);
    this.acted.add(audit.uid);
    if (typeof action === "object") {
      this.log.info("leaving an unprotected pod alone", { pod: subject, status: audit.status, reason: action.skip });
      return;
    }
    this.metrics.unprotected(audit.status);
    this.log.warn("meshed pod without its redirect", {
      pod: subject,
      status: audit.status,
      action,
      details: audit.details,
      ...(changedAt === undefined ? {} : { detectedMs: Math.round(performance.now() - changedAt) }),
    });
    try {
      await this.api.createPodEvent(pod, {
        reason: eventReason,
        type: "Warning",
        message: eventMessage(audit, action, this.options.policy),
      });
      if (action === "delete") await this.api.deletePod(pod);
      if (action === "label") await this.api.labelPod(pod, unprotectedLabel, "true");
      if (action !== "none") this.metrics.repaired(action);
    } catch (error) {
      this.log.error("could not report or repair the pod", { pod: subject, action, error: errorMessage(error) });
    }
  }
}
