import type { Server } from "node:http";
import { isNetDirFile } from "../cni/config-dir.js";
import { errorMessage } from "../errors.js";
import { Installation } from "../installer/install.js";
import { type Readiness, withProblem } from "../installer/readiness.js";
import type { Template } from "../installer/template.js";
import { type Logger, StandingProblems } from "../log.js";
import { ChainProof } from "./chain-proof.js";
import { Credentials } from "./credentials.js";
import type { AgentMetrics } from "./metrics.js";
import { type NetconfSource, netconfSourceOf, sayNetconf } from "./netconf-source.js";
import { NetDirReporter } from "./netdir-report.js";
import { NodeTasks } from "./node-tasks.js";
import type { AgentOptions } from "./options.js";
import { OwnInstall } from "./own-install.js";
import { checkLiveness, checkReadiness, sayReadiness, serveProbes } from "./probes.js";
import { RuntimeSocketCheck } from "./runtime-socket.js";
import { askPatiently, decideStop, ownerState } from "./stop.js";
import { DirWatcher } from "./watch.js";

/**
 * The node agent's main loop: keeps meshcni installed (the binary, the plugin's kubeconfig
 * with a token it mints for the plugin's own ServiceAccount, the entry last in the active
 * CNI config) and, with a node, its NodeTasks (answer the plugin, sweep the node's pods,
 * lift the startup taint). Level-triggered: every watch event, retry and resync runs the
 * same reconcile, which carries out what the installer decides from the disk as it is, so
 * event kinds do not matter and its own writes change nothing the second time.
 */
export class NodeAgent {
  private readonly installation: Installation;
  private readonly watcher: DirWatcher;
  private readonly credentials: Credentials;
  private readonly nodeTasks: NodeTasks | undefined;
  private readonly runtimeSocket: RuntimeSocketCheck | undefined;
  private readonly problems: StandingProblems;
  private readonly reporter: NetDirReporter;
  private readonly chainProof: ChainProof;
  private server: Server | undefined;
  private stopped = false;
  private lastReconcileAt: number;
  /** The agent's ConfigMap as the API holds it: what it runs with, where kubelet's copy lags (--config-map). */
  private readonly netconfSource: NetconfSource | undefined;
  /** The DaemonSet owning the agent's pod and its ServiceAccount (in a pod, with --on-stop auto): what a stop asks about. */
  private readonly install: OwnInstall | undefined;
  readiness: Readiness = { ready: false, reasons: ["starting"], cause: "Starting", active: undefined, missingPlugins: [] };

  constructor(
    private readonly options: AgentOptions,
    private readonly log: Logger,
    private readonly metrics: AgentMetrics,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.installation = new Installation(options.install, now);
    this.lastReconcileAt = now();
    this.problems = new StandingProblems(log);
    this.watcher = new DirWatcher(
      [
        // The drop-in's dir, an entry of the net dir, is in the net dir's signature.
        { dir: this.installation.paths.netDir, relevant: (name) => name === null || isNetDirFile(name) },
        { dir: options.serviceAccountDir, relevant: () => true },
        // A plugin installed or removed makes the chain whole or broken. Polled shallow: one chmodded in place is seen by
        // the watcher, or at the resync if the watcher drops it.
        ...this.installation.paths.pluginDirs.map((dir) => ({ dir, relevant: () => true, shallow: true })),
      ],
      options.resyncSeconds * 1000,
      (eventAt) => this.reconcile(eventAt),
      log,
    );
    this.reporter = new NetDirReporter(this.installation.paths.netDir, log, metrics, this.problems, this.watcher, now);
    this.chainProof = new ChainProof(this.installation, options, () => this.watcher.schedule(), log, metrics, now);
    this.credentials = new Credentials(
      options,
      this.installation.paths.kubeconfig,
      log,
      this.problems,
      () => this.watcher.schedule(),
      (ok) => metrics.pluginTokenRequests.inc({ result: ok ? "minted" : "failed" }),
    );
    metrics.tokenLeft.seconds = () => this.credentials.pluginTokenSecondsLeft();
    const retry = (delayMs = 1000) => this.watcher.schedule(undefined, delayMs);
    const template = () => this.installation.template;
    this.nodeTasks = options.node
      ? new NodeTasks(options.node, options, this.installation.paths.agentSocket, template, log, metrics, retry, now)
      : undefined;
    this.netconfSource = netconfSourceOf(options, this.installation, {
      replace: (template) => this.replaceNetconf(template),
      log,
      problems: this.problems,
      verified: (value) => metrics.netconfVerified.set(value),
      now,
    });
    this.runtimeSocket = options.node ? new RuntimeSocketCheck(options.sweep.criSocket, options.install.hostRoot, now) : undefined;
    this.install =
      options.self && options.onStop === "auto"
        ? new OwnInstall(options.self, {
            config: () => this.credentials.client!.config,
            heard: (sentAt, failure) => this.nodeTasks?.refusal.heard(sentAt, failure),
            watchTimeoutSeconds: options.watchTimeoutSeconds,
            log,
            metrics,
          })
        : undefined;
  }

  /** Listens first: an address it cannot bind fails the start before anything on the host changes. */
  async start(): Promise<void> {
    if (this.options.listen) {
      const liveness = () => {
        const stale = this.runtimeSocket?.problem();
        return stale ? { alive: false, reason: stale } : checkLiveness(this.lastReconcileAt, this.now(), this.options.resyncSeconds);
      };
      this.server = await serveProbes(this.options.listen, { readiness: () => this.readiness, liveness, metrics: this.metrics }, this.log);
    }
    const { template } = this.installation;
    if (!template.ok) this.log.error(template.reason);
    else sayNetconf(this.log, "starting with this netconf", { from: this.netconfSource ? "kubelet" : "flags" }, template.entry);
    this.installBinary();
    this.watcher.start();
    // No runtime to ask (or --chain-by conflist): decided here, before the first look; else chained once the runtime answers.
    void this.chainProof.start();
    this.reconcile(undefined);
  }

  private installBinary(): void {
    const path = this.installation.binaryPath;
    if (!path) return;
    try {
      const { installed, bytes } = this.installation.installBinary(path);
      this.log.info(installed ? "binary installed" : "binary already installed", { path, ...(installed ? { bytes } : {}) });
    } catch (error) {
      this.log.error("cannot install the binary", { path, error: errorMessage(error) });
    }
  }

  /** Runs with the API's netconf from now on: chained, its binary installed, every pod swept against it; nothing after a stop (an uninstall). */
  private replaceNetconf(template: Template & { ok: true }): void {
    if (this.stopped) return;
    this.installation.replaceTemplate(template);
    sayNetconf(this.log, "running with this netconf", { source: "the ConfigMap, as the API holds it" }, template.entry);
    this.installBinary();
    this.nodeTasks?.netconfReplaced();
    this.watcher.schedule();
  }

  /**
   * SIGTERM: a restart (the DaemonSet stays) leaves everything in place; an uninstall
   * takes meshcni out of every config, then removes the kubeconfig, the binary and the
   * state dir (see decideStop).
   */
  async stop(): Promise<void> {
    this.stopped = true;
    this.credentials.stop();
    const { uninstall, why } = await decideStop(
      this.options.onStop,
      this.options.self !== undefined,
      this.install?.deleted() ?? false,
      () => {
        if (!this.credentials.client) throw new Error("the agent has no credentials");
        const { api } = this.credentials.client;
        return askPatiently(() => ownerState(api, this.options.self!, this.install?.daemonSet));
      },
    );
    await this.install?.stop();
    await this.nodeTasks?.stop();
    this.watcher.stop();
    this.chainProof.close();
    await new Promise<void>((resolve) => {
      if (!this.server) return resolve();
      this.server.close(() => resolve());
      // A request still being sent (a scraper stalled midway) must not hold the stop.
      this.server.closeAllConnections();
    });
    if (!uninstall) {
      this.log.info("stopping; meshcni stays installed and chained", { why });
      return;
    }
    try {
      const { changed, running } = this.installation.uninstall();
      for (const file of changed) this.reporter.removedEntry(file, "uninstalling");
      // Their proxies still run: their redirect stays until they end, and the runtime no longer calls meshcni for them.
      if (running.length > 0) this.log.info("pods still running keep their redirect until they end", { pods: running });
      this.log.info("uninstalled", { why });
    } catch (error) {
      this.log.error("could not uninstall everything", { error: errorMessage(error) });
    }
  }

  private reconcile(eventAt: number | undefined): void {
    if (this.stopped) return;
    this.lastReconcileAt = this.now();
    this.log.debug("reconcile");
    this.credentials.sync();
    this.netconfSource?.follow(this.credentials.client?.api);
    if (this.credentials.client) this.install?.learn(this.credentials.client.api);
    try {
      const plan = this.installation.syncNetDir();
      if (plan) this.reporter.report(plan, eventAt);
      if (plan) this.chainProof.afterSync(plan);
      this.problems.set("netdir-io", undefined);
    } catch (error) {
      this.problems.set("netdir-io", `cannot update the CNI config dir, retrying at each event and resync: ${errorMessage(error)}`, {
        level: "error",
      });
    }
    const readiness = withProblem(
      withProblem(checkReadiness(this.installation, this.options.serviceAccountDir), "PolicyNotBound", this.nodeTasks?.scopeProblem()),
      "Unauthorized",
      this.nodeTasks?.refusal.problem(),
    );
    sayReadiness(this.readiness, readiness, this.log, this.metrics);
    this.readiness = readiness;
    this.nodeTasks?.follow(this.credentials.client, readiness);
    void this.runtimeSocket?.check();
    this.problems.set("runtime-socket", this.runtimeSocket?.problem(), { level: "error" });
  }
}
