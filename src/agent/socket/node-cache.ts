import type { V1Namespace, V1Pod, V1Service } from "@kubernetes/client-node";

/** A store a reflector keeps, and whether it stands for the API now (see Reflector.fresh). */
export interface FreshStore<T> {
  get(key: string): T | undefined;
  fresh(): boolean;
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
  ) {}

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
