// Whether the agent's own DaemonSet was deleted, as the API said on a watch. A stop reads it
// first: an uninstall deletes meshcni's ServiceAccounts with the DaemonSet, and from then on
// every request of the agent's is refused (401), but a watch opened before stays open and
// still brings the deletion. A 401 alone never proves an uninstall: a signing key rotated
// without the old one kept refuses every token as well.
import type { KubeConfig } from "@kubernetes/client-node";
import { errorMessage } from "../errors.js";
import type { NodeApi } from "../kube/node-api.js";
import { Reflector } from "../kube/reflector.js";
import { apiSource } from "../kube/sources.js";
import type { Logger } from "../log.js";
import type { PodKey } from "../pod-key.js";
import type { AgentMetrics } from "./metrics.js";

interface WatchOptions {
  config: () => KubeConfig;
  /** Whether each request was accepted, or how it failed. */
  heard: (sentAt: number, failure?: unknown) => void;
  watchTimeoutSeconds: number;
  log: Logger;
  metrics: AgentMetrics;
}

/**
 * The DaemonSet that owns the agent's pod: its name read from the pod once the agent's
 * client works (null: none owns it; a failure is tried again at the next `learn`), then
 * watched for its deletion. What a stop asks about.
 */
export class OwnDaemonSet {
  name: string | null | undefined;
  private learning = false;
  private stopped = false;
  private watch: OwnerWatch | undefined;

  constructor(
    private readonly self: PodKey,
    private readonly options: WatchOptions,
  ) {}

  learn(api: Pick<NodeApi, "daemonSetOf">): void {
    if (this.name !== undefined || this.learning || this.stopped) return;
    this.learning = true;
    const { namespace } = this.self;
    api
      .daemonSetOf(namespace, this.self.name)
      .then(
        (name) => {
          this.name = name;
          this.options.log.info("a stop will ask about this DaemonSet", { daemonSet: name ?? "(none owns the agent's pod)" });
          if (name && !this.stopped) this.watch = new OwnerWatch(namespace, name, this.options);
        },
        (error) => this.options.log.debug("cannot read the agent's own pod yet", { error: errorMessage(error) }),
      )
      .finally(() => {
        this.learning = false;
      });
  }

  /** Its deletion seen on its watch. */
  deleted(): boolean {
    return this.watch?.deleted() ?? false;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.watch?.stop();
  }
}

/** What a stop needs of the DaemonSet (the API's JSON as sent): whether it is being deleted. */
interface Owner {
  metadata?: { name?: string; resourceVersion?: string; deletionTimestamp?: string };
}

class OwnerWatch {
  private deletionSeen = false;
  private readonly reflector: Reflector<Owner>;

  constructor(
    namespace: string,
    private readonly name: string,
    { config, heard, watchTimeoutSeconds, log, metrics }: WatchOptions,
  ) {
    const source = apiSource<Owner>({
      name: "daemonset",
      config,
      path: `/apis/apps/v1/namespaces/${namespace}/daemonsets`,
      query: { fieldSelector: `metadata.name=${name}` },
      transform: (daemonSet) => {
        const { resourceVersion, deletionTimestamp } = (daemonSet as Owner).metadata ?? {};
        return { metadata: { name, ...(resourceVersion ? { resourceVersion } : {}), ...(deletionTimestamp ? { deletionTimestamp } : {}) } };
      },
      key: (daemonSet) => daemonSet.metadata?.name ?? "",
      heard,
    });
    const timing = { watchTimeoutSeconds, now: () => performance.now(), random: Math.random };
    const seen = () => {
      if (!this.deletionSeen) log.info("the agent's DaemonSet is being deleted: its stop will uninstall", { daemonSet: name });
      this.deletionSeen = true;
    };
    this.reflector = new Reflector(source, timing, log, {
      change: (daemonSet) => {
        if (daemonSet.metadata?.deletionTimestamp) seen();
      },
      remove: seen,
      ended: (cause) => metrics.watchRestarts.inc({ watch: source.name, cause }),
    });
    metrics.cacheAges.set(source.name, () => this.reflector.ageSeconds());
    this.reflector.start();
  }

  /** A deletion seen, and no DaemonSet of that name since (one created again is a new install: it replaces this pod). */
  deleted(): boolean {
    const now = this.reflector.get(this.name);
    return this.deletionSeen && (!now || now.metadata?.deletionTimestamp !== undefined);
  }

  stop(): Promise<void> {
    return this.reflector.stop();
  }
}
