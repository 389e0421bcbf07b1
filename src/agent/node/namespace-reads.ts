import type { V1Namespace, V1Pod } from "@kubernetes/client-node";
import type { SweepRequest } from "../../audit/contract.js";
import { isMeshed, namespaceFields, needsNamespaceAnnotations } from "../../mesh/pod.js";

/**
 * How old a namespace's annotations may be where they decide. An ADD: read at most 10 s
 * before (when the pod was bound to the node, or at the ADD itself). A sweep: 10 minutes
 * (what it reports as stale is a pod's drift from them; its rules are the ADD's plan).
 */
export const namespaceFreshness = { addMs: 10_000, sweepMs: 600_000 } as const;

/** Why a namespace was read: ahead of a pod's ADD, at the ADD, or for a sweep. */
export type NamespaceReadCause = "prefetch" | "add" | "sweep";

interface Held {
  namespace: V1Namespace;
  readAt: number;
}

/**
 * The namespaces of the node's meshed pods, each read from the API when a decision needs its
 * annotations and no read young enough is held: no watch of every namespace (a change of any
 * one would go to every node). One read in flight per name; entries of namespaces no pod of
 * the node is in are dropped once older than a sweep would take them (`keepOnly`), so what is
 * held is bounded by the node's pods.
 */
export class NamespaceReads {
  private readonly held = new Map<string, Held>();
  private readonly reading = new Map<string, Promise<V1Namespace>>();

  constructor(
    private readonly readFromApi: (name: string) => Promise<V1Namespace>,
    private readonly now: () => number,
    /** Each read's cause and whether it was answered. */
    private readonly counted: (cause: NamespaceReadCause, result: "read" | "failed") => void = () => undefined,
  ) {}

  /** The namespace as read within maxAgeMs; undefined: none that young is held. */
  within(name: string, maxAgeMs: number): V1Namespace | undefined {
    const held = this.held.get(name);
    return held && this.now() - held.readAt <= maxAgeMs ? held.namespace : undefined;
  }

  /** Read now from the API (joining a read already in flight, which started no earlier than this asks). */
  read(name: string, cause: NamespaceReadCause): Promise<V1Namespace> {
    const inFlight = this.reading.get(name);
    if (inFlight) return inFlight;
    const readAt = this.now();
    const reading = this.readFromApi(name)
      .then(
        (namespace) => {
          const kept = namespaceFields(namespace);
          if ((this.held.get(name)?.readAt ?? -Infinity) <= readAt) this.held.set(name, { namespace: kept, readAt });
          this.counted(cause, "read");
          return kept;
        },
        (error: unknown) => {
          this.counted(cause, "failed");
          throw error;
        },
      )
      .finally(() => this.reading.delete(name));
    this.reading.set(name, reading);
    return reading;
  }

  /** As a cache's store: what is held within maxAgeMs (a namespace has no watch to fall behind). */
  store(maxAgeMs: number): { get(name: string): V1Namespace | undefined; fresh(): boolean } {
    return { get: (name) => this.within(name, maxAgeMs), fresh: () => true };
  }

  /** The namespace as read within maxAgeMs, else read now. */
  async get(name: string, maxAgeMs: number, cause: NamespaceReadCause): Promise<V1Namespace> {
    return this.within(name, maxAgeMs) ?? this.read(name, cause);
  }

  /** Reads ahead of a pod's ADD unless a read young enough for it is held (one in flight is joined); a failure is left to the ADD. */
  prefetch(name: string): void {
    if (this.within(name, namespaceFreshness.addMs / 2)) return;
    this.read(name, "prefetch").catch(() => undefined);
  }

  /** Drops what the node no longer needs: namespaces none of `names` is, read longer ago than a sweep takes. */
  keepOnly(names: ReadonlySet<string>): void {
    for (const [name, { readAt }] of this.held)
      if (!names.has(name) && this.now() - readAt > namespaceFreshness.sweepMs) this.held.delete(name);
  }
}

/** A pod whose ADD may need its namespace: meshed, and its own annotations leave some to the namespace's. */
const readsNamespace = (pod: V1Pod) => isMeshed(pod) && needsNamespaceAnnotations(pod);

/**
 * A meshed pod just bound to the node (no IP yet) whose ADD will read its namespace: read it
 * now, so that the ADD, a moment later, is answered without a request.
 */
export function prefetchNamespaceOf(pod: V1Pod, namespaces: NamespaceReads): void {
  const name = pod.metadata?.namespace;
  if (name && !pod.status?.podIP && !pod.metadata?.deletionTimestamp && readsNamespace(pod)) namespaces.prefetch(name);
}

/**
 * For a sweep: the node's pods as their cache holds them, and the namespaces of the meshed
 * ones as read within a sweep's bound (read now where none is; one that cannot be is left out,
 * and the sweep reads it itself). Undefined while the pods' cache is not fresh.
 */
export async function sweepView(
  pods: { fresh(): boolean; values(): V1Pod[] } | undefined,
  namespaces: NamespaceReads,
): Promise<SweepRequest["view"]> {
  if (!pods?.fresh()) return undefined;
  const held = pods.values();
  const names = new Set(held.filter(readsNamespace).map((pod) => pod.metadata?.namespace ?? ""));
  namespaces.keepOnly(names);
  const read = await Promise.all(
    [...names].map((name) => namespaces.get(name, namespaceFreshness.sweepMs, "sweep").catch(() => undefined)),
  );
  return { pods: held, namespaces: read.filter((namespace) => namespace !== undefined) } as SweepRequest["view"];
}
