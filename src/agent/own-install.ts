// Whether meshcni is being uninstalled, as the API said on a watch. An uninstall (`kubectl
// delete -k`, `helm uninstall`) deletes the agent's ServiceAccount with its DaemonSet, and from
// then on every request of the agent's is refused (401), but a watch opened before stays open
// and still brings the deletion. The ServiceAccount, not the DaemonSet, is watched: a rollout
// changes the DaemonSet's status once per node, and each change would go to every node's agent
// (N² events a rollout); the account changes in none. A 401 alone never proves an uninstall: a
// signing key rotated without the old one kept refuses every token as well.
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
 * What the agent's pod says of its install, read once the agent's client works (a failure
 * is tried again at the next `learn`): the DaemonSet owning it (null: none), which a stop
 * asks about by name, and the ServiceAccount it runs as, watched for its deletion.
 */
export class OwnInstall {
  /** The DaemonSet's name; undefined: not learned yet. */
  daemonSet: string | null | undefined;
  private learning = false;
  private stopped = false;
  private watch: AccountWatch | undefined;

  constructor(
    private readonly self: PodKey,
    private readonly options: WatchOptions,
  ) {}

  learn(api: Pick<NodeApi, "ownersOf">): void {
    if (this.daemonSet !== undefined || this.learning || this.stopped) return;
    this.learning = true;
    const { namespace } = this.self;
    api
      .ownersOf(namespace, this.self.name)
      .then(
        ({ daemonSet, serviceAccount }) => {
          this.daemonSet = daemonSet;
          this.options.log.info("a stop will ask about this DaemonSet", {
            daemonSet: daemonSet ?? "(none owns the agent's pod)",
            serviceAccount,
          });
          if (daemonSet && !this.stopped) this.watch = new AccountWatch(namespace, serviceAccount, this.options);
        },
        (error) => this.options.log.debug("cannot read the agent's own pod yet", { error: errorMessage(error) }),
      )
      .finally(() => {
        this.learning = false;
      });
  }

  /** The agent's ServiceAccount's deletion seen on its watch. */
  deleted(): boolean {
    return this.watch?.deleted() ?? false;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.watch?.stop();
  }
}

/** What a stop needs of the ServiceAccount (the API's JSON as sent): whether it is being deleted. */
interface Account {
  metadata?: { name?: string; resourceVersion?: string; deletionTimestamp?: string };
}

class AccountWatch {
  private deletionSeen = false;
  private readonly reflector: Reflector<Account>;

  constructor(
    namespace: string,
    private readonly name: string,
    { config, heard, watchTimeoutSeconds, log, metrics }: WatchOptions,
  ) {
    const source = apiSource<Account>({
      name: "serviceaccount",
      config,
      path: `/api/v1/namespaces/${namespace}/serviceaccounts`,
      query: { fieldSelector: `metadata.name=${name}` },
      transform: (account) => {
        const { resourceVersion, deletionTimestamp } = (account as Account).metadata ?? {};
        return { metadata: { name, ...(resourceVersion ? { resourceVersion } : {}), ...(deletionTimestamp ? { deletionTimestamp } : {}) } };
      },
      key: (account) => account.metadata?.name ?? "",
      heard,
    });
    const timing = { watchTimeoutSeconds, now: () => performance.now(), random: Math.random };
    const seen = () => {
      if (!this.deletionSeen)
        log.info("the agent's ServiceAccount is deleted: meshcni is being uninstalled, its stop will uninstall", { serviceAccount: name });
      this.deletionSeen = true;
    };
    this.reflector = new Reflector(source, timing, log, {
      change: (account) => {
        if (account.metadata?.deletionTimestamp) seen();
      },
      remove: seen,
      ended: (cause) => metrics.watchRestarts.inc({ watch: source.name, cause }),
    });
    metrics.cacheAges.set(source.name, () => this.reflector.ageSeconds());
    this.reflector.start();
  }

  /** A deletion seen, and no account of that name since (one created again is a new install: it replaces this pod). */
  deleted(): boolean {
    const now = this.reflector.get(this.name);
    return this.deletionSeen && (!now || now.metadata?.deletionTimestamp !== undefined);
  }

  stop(): Promise<void> {
    return this.reflector.stop();
  }
}
