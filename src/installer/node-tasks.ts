import { existsSync, readFileSync } from "node:fs";
import { AuditMonitor } from "../audit/monitor.js";
import { errorMessage } from "../errors.js";
import { createNodeApi, kubeConfigFrom, type NodeApi } from "../kube/node-api.js";
import type { Logger } from "../log.js";
import type { InstallerMetrics } from "./metrics.js";
import type { InstallerOptions } from "./options.js";
import { TaintKeeper } from "./taint.js";

/**
 * What the agent does through the API for its node once it knows its readiness: audit
 * and repair the node's meshed pods (once ready), and lift or restore the startup taint.
 * It uses the kubeconfig the agent wrote, and a new client whenever that changed (a
 * rotated token).
 */
export class NodeTasks {
  private readonly taint: TaintKeeper | undefined;
  private monitor: AuditMonitor | undefined;
  private monitorApi: NodeApi | undefined;
  private client: { api: NodeApi; kubeconfig: string } | undefined;

  constructor(
    private readonly node: string,
    private readonly options: InstallerOptions,
    private readonly kubeconfigPath: string,
    private readonly log: Logger,
    private readonly metrics: InstallerMetrics,
    retry: () => void,
  ) {
    this.taint = options.startupTaint && new TaintKeeper(options.startupTaint, options.restoreTaint, log, retry);
  }

  follow(ready: boolean): void {
    const api = this.currentApi();
    if (!api) return;
    if (ready && this.monitorApi !== api) {
      this.monitorApi = api;
      this.monitor ??= this.createMonitor();
      this.monitor.start(api).catch((error: unknown) => this.log.error("cannot watch this node's pods", { error: errorMessage(error) }));
    }
    this.taint?.follow(api, ready);
  }

  async stop(): Promise<void> {
    await this.monitor?.stop();
  }

  private currentApi(): NodeApi | undefined {
    if (!existsSync(this.kubeconfigPath)) return undefined;
    const kubeconfig = readFileSync(this.kubeconfigPath, "utf8");
    if (this.client?.kubeconfig !== kubeconfig)
      this.client = { api: createNodeApi(kubeConfigFrom(this.kubeconfigPath), this.node), kubeconfig };
    return this.client.api;
  }

  private createMonitor(): AuditMonitor {
    const { sourceBinary, hostRoot, stateDir, netDir, netnsDirs, repair, maxEvictionsPerMinute, repairExcludeNamespaces, auditSeconds } =
      this.options;
    return new AuditMonitor(
      {
        binary: sourceBinary,
        node: this.node,
        kubeconfig: this.kubeconfigPath,
        hostRoot,
        stateDir,
        netDir,
        netnsDirs,
        policy: repair,
        maxEvictionsPerMinute,
        excludeNamespaces: repairExcludeNamespaces,
        auditSeconds,
      },
      this.log,
      {
        statuses: (counts) => {
          for (const [status, count] of Object.entries(counts)) this.metrics.meshedPods.set({ status }, count);
        },
        repaired: (action, result) => this.metrics.repairs.inc({ action, result }),
        recordsRemoved: (reason, count) => this.metrics.recordsRemoved.inc({ reason }, count),
        audited: (seconds) => this.metrics.auditDuration.observe(seconds),
      },
    );
  }
}
