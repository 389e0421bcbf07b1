import { rmSync } from "node:fs";
import type { Server } from "node:http";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { brokenConfigReason, isConfigName, parseConfig, readConfigFiles } from "../cni/config-dir.js";
import { errorMessage, withTimeout } from "../errors.js";
import { writeAtomic } from "../files.js";
import { createNodeApi } from "../kube/node-api.js";
import { type Logger, StandingProblems } from "../log.js";
import { installBinary } from "./binary.js";
import { withoutEntry } from "./conflist.js";
import { agentKubeconfig, caPem, PluginTokens } from "./credentials.js";
import { fightWindowMs } from "./fight.js";
import { type ApiEndpoint, syncKubeconfig } from "./kubeconfig.js";
import type { InstallerMetrics } from "./metrics.js";
import { freshMemory, type NetDirMemory, planNetDir } from "./netdir.js";
import { type AgentClient, NodeTasks } from "./node-tasks.js";
import { type InstallerOptions, installerPaths } from "./options.js";
import { checkLiveness, checkReadiness, type Readiness } from "./readiness.js";
import { serveProbes } from "./server.js";
import { loadTemplate, type Template } from "./template.js";
import { decideStop, removeInstalledFiles } from "./uninstall.js";
import { DirWatcher } from "./watch.js";

/**
 * The node agent: installs the binary, keeps the plugin's kubeconfig current (with a
 * token it mints for the plugin's own ServiceAccount; its own stays in memory), and keeps
 * meshcni's entry last in the active CNI config. Level-triggered: every watch event, retry
 * and resync runs the same reconcile, which carries out what planNetDir decides from the
 * disk as it is, so event kinds do not matter and its own writes change nothing the second
 * time. Its NodeTasks answer the plugin, audit the node's pods and lift the startup taint.
 */
export class InstallAgent {
  private readonly paths: ReturnType<typeof installerPaths>;
  private readonly template: Template;
  private readonly watcher: DirWatcher;
  private readonly nodeTasks: NodeTasks | undefined;
  private memory: NetDirMemory = freshMemory;
  private server: Server | undefined;
  private stopped = false;
  private lastReconcileAt: number;
  private readonly problems: StandingProblems;
  private readonly tokens: PluginTokens;
  private client: AgentClient | undefined;
  private renewal: NodeJS.Timeout | undefined;
  readiness: Readiness = { ready: false, reasons: ["starting"], active: undefined };

  constructor(
    private readonly options: InstallerOptions,
    private readonly log: Logger,
    private readonly metrics: InstallerMetrics,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.paths = installerPaths(options);
    this.lastReconcileAt = now();
    this.problems = new StandingProblems(log);
    this.tokens = new PluginTokens(options.pluginServiceAccount, options.pluginTokenSeconds, () => Date.now());
    this.template = loadTemplate(options);
    this.watcher = new DirWatcher(
      [
        { dir: this.paths.netDir, relevant: (name) => name === null || isConfigName(name) },
        { dir: options.serviceAccountDir, relevant: () => true },
      ],
      options.resyncSeconds * 1000,
      (eventAt) => this.reconcile(eventAt),
      log,
    );
    const retry = () => this.watcher.schedule(undefined, 1000);
    this.nodeTasks = options.node ? new NodeTasks(options.node, options, this.paths.agentSocket, log, metrics, retry) : undefined;
  }

  /** Listens first: an address it cannot bind fails the start before anything on the host changes. */
  async start(): Promise<void> {
    if (this.options.listen) {
      const { host, port } = this.options.listen;
      try {
        this.server = await serveProbes(this.options.listen, {
          readiness: () => this.readiness,
          liveness: () => checkLiveness(this.lastReconcileAt, this.now(), this.options.resyncSeconds),
          metrics: this.metrics,
        });
      } catch (error) {
        throw new Error(`cannot listen on ${host.includes(":") ? `[${host}]` : host}:${port} (--listen): ${errorMessage(error)}`);
      }
      const address = this.server.address();
      this.log.info("serving /readyz, /healthz and /metrics", {
        address: typeof address === "object" && address ? `${address.address}:${address.port}` : address,
      });
    }
    if (!this.template.ok) this.log.error(this.template.reason);
    else this.installBinary(this.template.binaryName);
    this.watcher.start();
    this.reconcile(undefined);
  }

  /**
   * SIGTERM: a restart (the DaemonSet stays) leaves everything in place; an uninstall
   * takes meshcni out of every config, then removes the kubeconfig, the binary and the
   * state dir (see decideStop).
   */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.renewal);
    const { uninstall, why } = await decideStop(this.options.onStop, this.options.self !== undefined, () => {
      const self = this.options.self!;
      if (!this.client) throw new Error("the agent has no credentials");
      return withTimeout(this.client.api.ownerDaemonSet(self.namespace, self.name), 5000);
    });
    await this.nodeTasks?.stop();
    this.watcher.stop();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    if (!uninstall) {
      this.log.info("stopping; meshcni stays installed and chained", { why });
      return;
    }
    try {
      for (const file of readConfigFiles(this.paths.netDir)) {
        const text = withoutEntry(parseConfig(file));
        if (text !== undefined) this.removeEntry(file.name, text, "uninstalling");
      }
      removeInstalledFiles(this.paths, this.template.ok ? this.template.binaryName : undefined);
      this.log.info("uninstalled", { why });
    } catch (error) {
      this.log.error("could not uninstall everything", { error: errorMessage(error) });
    }
  }

  private installBinary(name: string): void {
    const target = join(this.paths.binDir, name);
    try {
      const { installed, bytes } = installBinary(this.options.sourceBinary, target);
      this.log.info(installed ? "binary installed" : "binary already installed", { path: target, ...(installed ? { bytes } : {}) });
    } catch (error) {
      this.log.error("cannot install the binary", { path: target, error: errorMessage(error) });
    }
  }

  private reconcile(eventAt: number | undefined): void {
    if (this.stopped) return;
    this.lastReconcileAt = this.now();
    this.log.debug("reconcile");
    this.syncCredentials();
    try {
      if (this.template.ok) this.applyNetDir(this.template.entry, eventAt);
      this.problems.set("netdir-io", undefined);
    } catch (error) {
      this.problems.set("netdir-io", `cannot update the CNI config dir, retrying at each event and resync: ${errorMessage(error)}`, {
        level: "error",
      });
    }
    const readiness = checkReadiness(this.options, this.template);
    if (readiness.ready !== this.readiness.ready) {
      this.log.info(
        readiness.ready ? "ready" : "not ready",
        readiness.ready ? { active: readiness.active } : { reasons: readiness.reasons },
      );
    }
    this.readiness = readiness;
    this.metrics.ready.set(readiness.ready ? 1 : 0);
    this.nodeTasks?.follow(this.client, readiness.ready);
  }

  /**
   * The agent's own client (from its projected token, rebuilt when kubelet rotates it), and
   * the plugin's kubeconfig with a token minted for the plugin's ServiceAccount, renewed
   * before it expires. A mint's end schedules another reconcile, which writes it.
   */
  private syncCredentials(): void {
    const { apiHost: host, apiPort: port, apiProtocol: protocol, skipTlsVerify } = this.options;
    const api: ApiEndpoint | undefined = host && port ? { protocol, host, port, skipTlsVerify } : undefined;
    try {
      const kubeconfig = agentKubeconfig(this.options.serviceAccountDir, this.options.caFile, api);
      if (this.client?.kubeconfig !== kubeconfig) {
        const config = new KubeConfig();
        config.loadFromString(kubeconfig);
        this.client = { api: createNodeApi(config, this.options.node ?? ""), kubeconfig };
      }
      this.problems.set("credentials", undefined);
    } catch (error) {
      this.problems.set("credentials", errorMessage(error));
    }
    const { namespace, name } = this.options.pluginServiceAccount;
    if (this.client) {
      this.tokens.refresh(this.client.api.mintToken, (error) => {
        this.problems.set(
          "plugin token",
          error === undefined
            ? undefined
            : `cannot mint a token for ServiceAccount ${namespace}/${name} (TokenRequest), retrying: ${errorMessage(error)}`,
        );
        // The next reconcile writes the token and times the next mint from it.
        clearTimeout(this.renewal);
        this.renewal = undefined;
        this.watcher.schedule();
      });
      // Looked at again when the next mint is due (renewal, or a retry), with a margin: timers may fire a little early.
      if (!this.renewal) {
        this.renewal = setTimeout(() => {
          this.renewal = undefined;
          this.watcher.schedule();
        }, this.tokens.dueInMs() + 50);
      }
    }
    const token = this.tokens.token();
    if (!token) return;
    try {
      const written = syncKubeconfig({ path: this.paths.kubeconfig, token, caPem: caPem(this.options.caFile), api });
      if (written !== "unchanged") {
        this.log.info(written === "written" ? "kubeconfig written" : "kubeconfig rewritten (a renewed token, or the CA changed)", {
          path: this.paths.kubeconfig,
          serviceAccount: `${namespace}/${name}`,
        });
      }
      this.problems.set("kubeconfig", undefined);
    } catch (error) {
      this.problems.set("kubeconfig", errorMessage(error));
    }
  }

  /** Carries out planNetDir's plan; the memory is kept only once the writes succeeded. */
  private applyNetDir(entry: Record<string, unknown>, eventAt: number | undefined): void {
    const { plan, memory } = planNetDir(readConfigFiles(this.paths.netDir), entry, this.memory, this.now());
    if (plan.kind === "wait") {
      this.memory = memory;
      this.log.debug("the active config is not valid yet, retrying shortly", { file: plan.file });
      this.watcher.schedule(eventAt, plan.retryInMs);
      return;
    }
    if (plan.kind === "broken") {
      this.memory = memory;
      this.problems.set("netdir", brokenConfigReason(plan.file, plan.reason));
      return;
    }
    this.problems.set("netdir", undefined);
    for (const { name, text } of plan.removals) this.removeEntry(name, text, `${plan.active} is the active config`);
    if (plan.fight) {
      const { file, holdMs, started } = plan.fight;
      if (started) {
        this.metrics.fights.inc();
        this.log.warn(
          `another agent keeps removing meshcni's entry from ${join(this.paths.netDir, file)} (${started.rechains} times in ${fightWindowMs / 1000} s); ` +
            `backing off ${started.backoffMs / 1000} s. Is a CNI that owns the config dir exclusively running (e.g. Cilium with cni.exclusive=true)?`,
        );
      }
      this.watcher.schedule(undefined, holdMs);
    }
    const { write } = plan;
    if (write) {
      if (write.duplicates) this.log.warn("replacing duplicate meshcni entries with one", { file: write.name });
      writeAtomic(join(this.paths.netDir, write.name), write.text);
      if (write.replaces) rmSync(join(this.paths.netDir, write.replaces), { force: true });
      const rechain = write.cause !== "chain";
      const latencyMs = rechain && eventAt !== undefined ? this.now() - eventAt : undefined;
      if (rechain) this.metrics.rechains.inc({ cause: write.cause });
      if (latencyMs !== undefined) this.metrics.rechainDuration.observe(latencyMs / 1000);
      this.log.info(rechain ? "re-chained meshcni" : "chained meshcni", {
        file: join(this.paths.netDir, write.name),
        ...(rechain ? { cause: write.cause } : {}),
        ...(write.replaces ? { wrapped: write.replaces } : {}),
        ...(latencyMs === undefined ? {} : { latencyMs: Math.round(latencyMs * 10) / 10 }),
      });
    }
    this.memory = memory;
  }

  /** Writes a config without our entry (atomically). */
  private removeEntry(name: string, text: string, why: string): void {
    writeAtomic(join(this.paths.netDir, name), text);
    this.log.info("removed meshcni's entry", { file: join(this.paths.netDir, name), why });
  }
}
