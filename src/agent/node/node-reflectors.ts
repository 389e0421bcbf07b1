import type { KubeConfig, V1Node, V1Pod } from "@kubernetes/client-node";
import { Reflector } from "../../kube/reflector.js";
import { apiSource } from "../../kube/sources.js";
import type { ReflectorSource, ReflectorTiming } from "../../kube/watch-ends.js";
import type { Logger } from "../../log.js";
import { apiServerService, podFields, serviceDecisionFields } from "../../mesh/pod.js";
import { podName } from "../../pod-key.js";
import type { AgentMetrics } from "../metrics.js";
import { conditionType } from "./condition.js";

/** What the agent reads of its node: the taints and its own condition (and the uid and version, for its cache). */
function nodeFields(node: V1Node): V1Node {
  const { name, uid, resourceVersion } = node.metadata ?? {};
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name, uid, resourceVersion },
    spec: { taints: node.spec?.taints ?? [] },
    status: { conditions: (node.status?.conditions ?? []).filter((condition) => condition.type === conditionType) },
  } as V1Node;
}

export interface NodeReflectorOptions {
  node: string;
  watchTimeoutSeconds: number;
  /** The current client's config, read at each request: a rotated token is used from the next one on. */
  config: () => KubeConfig;
  log: Logger;
  metrics: AgentMetrics;
  podChanged(pod: V1Pod): void;
  podRemoved(pod: V1Pod): void;
  nodeChanged(): void;
  /** Whether each request was accepted, or how it failed (a refused token: TokenRefusal). */
  heard(sentAt: number, failure?: unknown): void;
}

export type NodeReflectors = ReturnType<typeof startNodeReflectors>;

/**
 * The agent's caches, each a reflector with its restarts counted and its age exposed: its
 * node's pods, the `kubernetes` Service and its own Node. No namespace is watched (each change
 * would go to every node): NamespaceReads reads those a decision needs.
 */
export function startNodeReflectors(given: NodeReflectorOptions) {
  const timing: ReflectorTiming = {
    watchTimeoutSeconds: given.watchTimeoutSeconds,
    now: () => performance.now(),
    random: Math.random,
    bookmarks: { seen: false },
  };
  const reflector = <T>(source: ReflectorSource<T>, hooks: { change?(object: T): void; remove?(object: T): void } = {}) => {
    const started = new Reflector(source, timing, given.log, {
      ...hooks,
      ended: (cause) => given.metrics.watchRestarts.inc({ watch: source.name, cause }),
    });
    given.metrics.cacheAges.set(source.name, () => started.ageSeconds());
    started.start();
    return started;
  };
  const source = <T>(
    name: string,
    path: string,
    query: Record<string, string>,
    transform: (object: never) => T,
    key: (object: T) => string,
  ) =>
    apiSource<T>({
      name,
      config: given.config,
      path,
      query,
      transform: transform as ReflectorSource<T>["transform"],
      key,
      heard: given.heard,
    });
  const pods = reflector(source("pods", "/api/v1/pods", { fieldSelector: `spec.nodeName=${given.node}` }, podFields, podName), {
    change: given.podChanged,
    remove: given.podRemoved,
  });
  // One object: the ports control-plane pods skip (linkerd-cni reads them at each ADD).
  const { namespace, name } = apiServerService;
  const service = reflector(
    source(
      "service",
      `/api/v1/namespaces/${namespace}/services`,
      { fieldSelector: `metadata.name=${name}` },
      serviceDecisionFields,
      (found) => `${found.metadata?.namespace}/${found.metadata?.name}`,
    ),
  );
  const node = reflector(
    source("node", "/api/v1/nodes", { fieldSelector: `metadata.name=${given.node}` }, nodeFields, (node) => node.metadata?.name ?? ""),
    { change: given.nodeChanged },
  );
  return { pods, service, node };
}
