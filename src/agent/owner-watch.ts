// Whether the agent's own DaemonSet was deleted, as the API said on a watch. A stop reads it
// first: an uninstall deletes meshcni's ServiceAccounts with the DaemonSet, and from then on
// every request of the agent's is refused (401), but a watch opened before stays open and
// still brings the deletion. A 401 alone never proves an uninstall: a signing key rotated
// without the old one kept refuses every token as well.
import type { KubeConfig } from "@kubernetes/client-node";
import { Reflector } from "../kube/reflector.js";
import { apiSource } from "../kube/sources.js";
import type { Logger } from "../log.js";
import type { AgentMetrics } from "./metrics.js";

/** What a stop needs of the DaemonSet (the API's JSON as sent): whether it is being deleted. */
interface Owner {
  metadata?: { name?: string; resourceVersion?: string; deletionTimestamp?: string };
}

export class OwnerWatch {
  private deletionSeen = false;
  private readonly reflector: Reflector<Owner>;

  constructor(
    namespace: string,
    private readonly name: string,
    config: () => KubeConfig,
    watchTimeoutSeconds: number,
    log: Logger,
    metrics: AgentMetrics,
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
