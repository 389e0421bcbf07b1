import type { PodStatus } from "../audit/classify.js";
import { buildInfo } from "../build-info.js";
import type { Readiness } from "../installer/readiness.js";
import type { Template } from "../installer/template.js";
import type { NodeApi } from "../kube/node-api.js";
import type { Logger } from "../log.js";
import type { PodKey } from "../pod-key.js";
import type { AgentClient } from "./credentials.js";
import type { AgentMetrics } from "./metrics.js";
import { ConditionKeeper, nodeCondition } from "./node/condition.js";
import { NamespaceReads, namespaceFreshness, prefetchNamespaceOf, sweepView } from "./node/namespace-reads.js";
import { type NodeReflectors, startNodeReflectors } from "./node/node-reflectors.js";
import { ScopeCheck } from "./node/scope-check.js";
import { TaintKeeper } from "./node/taint.js";
import type { AgentOptions } from "./options.js";
import { DeletedPods, NodeCache } from "./socket/node-cache.js";
import { type CallerChecks, kernelCallerChecks } from "./socket/peer.js";
import { startPluginSocket } from "./socket/plugin-server.js";
import type { PluginServer } from "./socket/plugin-socket.js";
import { AddsWritten } from "./sweeps/adds-written.js";
import { BackendReport } from "./sweeps/backends.js";
import { type AuditMonitor, startSweeps } from "./sweeps/monitor.js";
import { TokenRefusal } from "./token-refusal.js";
import { startWriters } from "./writers/writing.js";

/**
 * What the agent does through the API for its node: keep the node's pods, the `kubernetes`
 * Service and the node itself in reflectors, read the namespaces of its meshed pods as they
 * start (NamespaceReads), answer the plugin from them on a unix socket, audit
 * and repair the node's meshed pods once ready, keep its Node's MeshcniReady condition,
 * and lift or restore the startup taint. The reflectors read with the current client at each request: a
 * rotated token is used from the next request on, and no cache is listed again for it.
 */
export class NodeTasks {
  private readonly taint: TaintKeeper | undefined;
  private readonly condition: ConditionKeeper;
  private monitor: AuditMonitor | undefined;
  private client: AgentClient | undefined;
  private readiness: Readiness | undefined;
  /** The node's meshed pods by status as the last sweeps found them, and how many they left unprotected (undefined: no sweep yet). */
  private sweeps: { counts: Record<PodStatus, number>; unprotected: PodKey[] } | undefined;
  private reflectors: NodeReflectors | undefined;
  private readonly namespaces: NamespaceReads;
  private server: Promise<PluginServer | undefined> | undefined;
  private writers: ReturnType<typeof startWriters> | undefined;
  private readonly scope: ScopeCheck;
  private readonly backends: BackendReport;
  /** The pods whose ADD the writers carried out (their event sweeps are skipped while they stay as written). */
  private readonly written = new AddsWritten();
  private readonly deletedPods = new DeletedPods();
  /** Whether the API server refuses the agent's token, as its requests hear it. */
  readonly refusal: TokenRefusal;

  constructor(
    private readonly node: string,
    private readonly options: AgentOptions,
    /** The socket's path inside the agent's container; undefined: the plugin is not served. */
    private readonly socketPath: string | undefined,
    /** The plugin's entry as the agent chains it now: its paths are the only ones the writers write to. */
    private readonly template: () => Template,
    private readonly log: Logger,
    private readonly metrics: AgentMetrics,
    /** A reconcile after delayMs (1 s when not said). */
    retry: (delayMs?: number) => void,
    now: () => number,
    /** Who may ask on the plugin's socket (root only) and the netns each passes (tests run without the FFI it needs). */
    private readonly callers: () => Promise<CallerChecks> = kernelCallerChecks,
  ) {
    this.taint = options.startupTaint && new TaintKeeper(options.startupTaint.spec, options.startupTaint.restore, log, () => retry());
    this.condition = new ConditionKeeper(log);
    this.scope = new ScopeCheck(log, retry, now);
    this.refusal = new TokenRefusal(() => retry(0));
    this.backends = new BackendReport(log, metrics);
    this.namespaces = new NamespaceReads(
      (name) => this.currentApi().readNamespace(name),
      now,
      (cause, result) => metrics.namespaceReads.inc({ cause, result }),
    );
  }

  /** Why the agent's token is not held to its node (the node-scope policy does not bind it); undefined: it is, or not known yet. */
  scopeProblem(): string | undefined {
    return this.scope.problem();
  }

  follow(client: AgentClient | undefined, readiness: Readiness): void {
    this.client = client;
    this.readiness = readiness;
    if (!client) return;
    this.scope.follow(client);
    this.reflectors ??= startNodeReflectors({
      node: this.node,
      watchTimeoutSeconds: this.options.watchTimeoutSeconds,
      config: () => this.currentClient().config,
      log: this.log,
      metrics: this.metrics,
      podChanged: (pod) => {
        prefetchNamespaceOf(pod, this.namespaces);
        this.monitor?.changed(pod);
      },
      podRemoved: (pod) => {
        this.deletedPods.note(pod.metadata?.uid);
        this.written.forget(pod.metadata?.uid ?? "");
        this.monitor?.removed(pod);
      },
      nodeChanged: () => this.followNode(),
      heard: (sentAt, failure) => this.refusal.heard(sentAt, failure),
    });
    this.server ??= this.serve(
      new NodeCache(this.reflectors.pods, this.namespaces.store(namespaceFreshness.addMs), this.reflectors.service, this.deletedPods),
    );
    if (readiness.ready) this.monitor ??= this.startSweeps();
    this.followNode();
  }

  /** The agent chains another entry: every pod is swept against it now (a redirect in another backend is moved). */
  netconfReplaced(): void {
    this.monitor?.sweepAll();
  }

  /** Aborts every request in flight (the watches' included) and closes the plugin's socket. */
  async stop(): Promise<void> {
    await this.monitor?.stop();
    this.condition.stop();
    const { pods, service, node } = this.reflectors ?? {};
    await Promise.all([pods?.stop(), service?.stop(), node?.stop()]);
    await (await this.server)?.close();
    this.writers?.stop();
  }

  /** The startup taint and the condition, from readiness, the last sweeps and the Node as its watch shows it. */
  private followNode(): void {
    if (!this.client || !this.readiness) return;
    const node = this.reflectors?.node.get(this.node);
    this.taint?.follow(this.client.api, this.readiness.ready, node);
    this.condition.follow(this.client.api, nodeCondition(this.readiness, this.sweeps, buildInfo.version), node);
  }

  /** The plugin's socket and the writers behind it (none without a socket path). */
  private async serve(cache: NodeCache): Promise<PluginServer | undefined> {
    if (!this.socketPath) return undefined;
    const { install, sweep } = this.options;
    const writers = startWriters(
      {
        binary: install.sourceBinary,
        hostRoot: install.hostRoot,
        netnsDirs: sweep.netnsDirs,
        template: this.template,
        criSocket: sweep.criSocket,
        written: this.written,
      },
      this.log,
      this.metrics,
    );
    this.writers = writers;
    const lookup = {
      node: this.node,
      readPod: (namespace: string, name: string) => this.currentApi().readPod(namespace, name),
      readNamespace: (name: string) => this.namespaces.read(name, "add"),
      readService: (namespace: string, name: string) => this.currentApi().readService(namespace, name),
    };
    const config = { path: this.socketPath, cache, lookup, writing: writers.writing, callers: this.callers };
    return startPluginSocket(config, this.log, this.metrics);
  }

  private currentClient(): AgentClient {
    if (!this.client) throw new Error("the agent has no credentials yet");
    return this.client;
  }

  private currentApi(): NodeApi {
    return this.currentClient().api;
  }

  private startSweeps(): AuditMonitor {
    const { install, sweep, self } = this.options;
    return startSweeps(
      {
        binary: install.sourceBinary,
        node: this.node,
        credentials: () => this.client?.kubeconfig,
        self,
        dirs: {
          hostRoot: install.hostRoot,
          stateDir: install.stateDir,
          netDir: install.netDir,
          netnsDirs: sweep.netnsDirs,
          criSocket: sweep.criSocket,
        },
        // Its own, not the active config's: a config that another installer keeps without meshcni still holds every pod to it.
        entry: () => {
          const template = this.template();
          return template.ok ? template.entry : undefined;
        },
        sweep,
        view: () => sweepView(this.reflectors?.pods, this.namespaces),
        holdsNode: () => this.reflectors?.pods.fresh() ?? false,
        written: this.written,
        look: async (paths, signal) => this.writers?.look(paths, signal),
      },
      this.log,
      {
        statuses: (counts, unprotected) => {
          this.sweeps = { counts, unprotected };
          this.followNode();
          for (const [status, count] of Object.entries(counts)) this.metrics.meshedPods.set({ status }, count);
          this.metrics.unprotectedPods.reset();
          for (const pod of unprotected)
            this.metrics.unprotectedPods.set({ pod_namespace: pod.namespace, pod_name: pod.name, status: pod.status }, 1);
        },
        repaired: (action, result) => this.metrics.repairs.inc({ action, result }),
        moved: (from, to, result) => this.metrics.moves.inc({ from, to, result }),
        recordsRemoved: (reason, count) => this.metrics.recordsRemoved.inc({ reason }, count),
        backends: (backends) => this.backends.take(backends),
        audited: (seconds) => this.metrics.auditDuration.observe(seconds),
        unchanged: () => this.metrics.auditsUnchanged.inc(),
      },
    );
  }
}
