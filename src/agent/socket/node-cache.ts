import type { V1Namespace, V1Pod, V1Service } from "@kubernetes/client-node";

/** A store a reflector keeps, and whether it stands for the API now (see Reflector.fresh). */
export interface FreshStore<T> {
  get(key: string): T | undefined;
  fresh(): boolean;
}

/** UIDs remembered as deleted: the most recent this many (a pod is never undeleted, so an old one just goes to the API). */
const deletedPodsKept = 4096;

/**
 * The UIDs of the node's pods its watch saw go (deleted, or gone from a relist): a sandbox
 * started for one (a pod deleted as it started) is answered at once, without a GET the API
 * would answer 404. A UID is never reused, so this never goes stale.
 */
export class DeletedPods {
  private readonly uids = new Set<string>();

  note(uid: string | undefined): void {
    if (!uid) return;
    this.uids.add(uid);
    if (this.uids.size > deletedPodsKept) this.uids.delete(this.uids.values().next().value as string);
  }

  has(uid: string): boolean {
    return this.uids.has(uid);
  }
}

/**
 * The node's pods and the `kubernetes` Service as the agent's reflectors keep them, and the
 * namespaces as last read (within the ADD's bound: NamespaceReads). It answers only while its
 * store is fresh: a watch down or silent past its bound answers nothing, so the caller reads
 * the API.
 */
export class NodeCache {
  constructor(
    private readonly pods: FreshStore<V1Pod>,
    private readonly namespaces: FreshStore<V1Namespace>,
    private readonly services?: FreshStore<V1Service>,
    private readonly deleted: DeletedPods = new DeletedPods(),
  ) {}

  /** Whether the node's pod of this UID was seen to go. */
  podDeleted(uid: string): boolean {
    return this.deleted.has(uid);
  }

  pod(namespace: string, name: string): V1Pod | undefined {
    return this.pods.fresh() ? this.pods.get(`${namespace}/${name}`) : undefined;
  }

  namespace(name: string): V1Namespace | undefined {
    return this.namespaces.fresh() ? this.namespaces.get(name) : undefined;
  }

  service(namespace: string, name: string): V1Service | undefined {
    return this.services?.fresh() ? this.services.get(`${namespace}/${name}`) : undefined;
  }
}
