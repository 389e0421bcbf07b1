import type { Server } from "node:net";
import { errorMessage } from "../errors.js";
import type { NodeApi } from "../kube/node-api.js";
import { type Logger, StandingProblems } from "../log.js";
import type { AgentClient } from "./credentials.js";
import type { AgentMetrics } from "./metrics.js";
import { AuditMonitor } from "./monitor.js";
import { NodeCache } from "./node-cache.js";
import type { AgentOptions } from "./options.js";
import { answerAsk, servePlugin } from "./plugin-server.js";
import { TaintKeeper } from "./taint.js";

/**
 * What the agent does through the API for its node: watch the node's pods and every
 * namespace into a cache, answer the plugin from it on a unix socket, audit and repair the
 * node's meshed pods once ready, and lift or restore the startup taint. A new client (a
 * rotated token) restarts the watches on it.
 */
export class NodeTasks {
  private readonly cache = new NodeCache();
  private readonly taint: TaintKeeper | undefined;
  private readonly problems: StandingProblems;
  private monitor: AuditMonitor | undefined;
  private client: AgentClient | undefined;
  private watching: NodeApi | undefined;
  private stopWatches: Array<() => Promise<void>> = [];
  private server: Promise<Server | undefined> | undefined;

  constructor(
    private readonly node: string,
    private readonly options: AgentOptions,
    /** The socket's path inside the agent's container; undefined: the plugin is not served. */
    private readonly socketPath: string | undefined,
    private readonly log: Logger,
    private readonly metrics: AgentMetrics,
    retry: () => void,
  ) {
    this.taint = options.startupTaint && new TaintKeeper(options.startupTaint.spec, options.startupTaint.restore, log, retry);
    this.problems = new StandingProblems(log);
  }

  follow(client: AgentClient | undefined, ready: boolean): void {
    this.client = client;
    if (!client) return;
    if (this.watching !== client.api) this.watch(client.api);
    this.server ??= this.serve();
    if (ready && !this.monitor) {
      this.monitor = this.createMonitor();
      this.monitor.start();
    }
    this.taint?.follow(client.api, ready);
  }

  async stop(): Promise<void> {
    this.monitor?.stop();
    await Promise.all(this.stopWatches.map((stop) => stop()));
    const server = await this.server;
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  }

  /** Watches the node's pods (into the cache and the monitor) and every namespace (into the cache) with this client. */
  private watch(api: NodeApi): void {
    this.watching = api;
    const previous = this.stopWatches;
    this.stopWatches = [];
    void Promise.all(previous.map((stop) => stop()));
    const failed = (what: string) => (error: unknown) =>
      this.problems.set(what, `the watch of ${what} failed, restarting it each second: ${errorMessage(error)}`);
    const started = [
      api.watchPods({
        change: (pod) => {
          this.cache.setPod(pod);
          this.monitor?.changed(pod);
        },
        remove: (pod) => {
          this.cache.removePod(pod);
          this.monitor?.removed(pod);
        },
        error: failed("this node's pods"),
        connected: () => this.problems.set("this node's pods", undefined),
      }),
      api.watchNamespaces({
        change: (namespace) => this.cache.setNamespace(namespace),
        remove: (namespace) => this.cache.removeNamespace(namespace),
        error: failed("namespaces"),
        connected: () => this.problems.set("namespaces", undefined),
      }),
    ];
    for (const watching of started) {
      watching.then(
        (stop) => (this.watching === api ? this.stopWatches.push(stop) : void stop()),
        (error: unknown) => this.log.error("cannot watch the API", { error: errorMessage(error) }),
      );
    }
  }

  /** Answers the plugin on its socket from the cache, else through the current client. */
  private async serve(): Promise<Server | undefined> {
    if (!this.socketPath) return undefined;
    const serverPort = Number(this.options.api.port ?? 443);
    const lookup = {
      readPod: (namespace: string, name: string) => this.currentApi().readPod(namespace, name),
      readNamespace: (name: string) => this.currentApi().readNamespace(name),
    };
    try {
      const server = await servePlugin(this.socketPath, (ask) => answerAsk(ask, this.cache, lookup, serverPort));
      this.log.info("answering the plugin", { socket: this.socketPath });
      return server;
    } catch (error) {
      this.log.error("cannot answer the plugin on its socket: it asks the API server itself", {
        socket: this.socketPath,
        error: errorMessage(error),
      });
      return undefined;
    }
  }

  private currentApi(): NodeApi {
    if (!this.client) throw new Error("the agent has no credentials yet");
    return this.client.api;
  }

  private createMonitor(): AuditMonitor {
    const { install, sweep, self } = this.options;
    return new AuditMonitor(
      {
        binary: install.sourceBinary,
        node: this.node,
        credentials: () => this.client?.kubeconfig,
        self,
        dirs: { hostRoot: install.hostRoot, stateDir: install.stateDir, netDir: install.netDir, netnsDirs: sweep.netnsDirs },
        sweep,
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
