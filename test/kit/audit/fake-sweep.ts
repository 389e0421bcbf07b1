import type { V1Pod } from "@kubernetes/client-node";
import { type ScanIo, type ScanTime, scanNetns } from "../../../src/audit/scan.js";
import type { SweepIo } from "../../../src/audit/sweep.js";
import { ApiStatusError } from "../../../src/kube/errors.js";
import { parseNetConf } from "../../../src/mesh/netconf.js";
import { type Backend, inspectPlans } from "../../../src/redirect/redirector.js";
import type { FakeNode } from "../plugin/fake-node.js";

export const stateDir = "/state";
export const netnsDir = "/var/run/netns";

/** What the fake API saw a sweep do. */
export interface ApiWrites {
  events: Array<{ pod: string; reason: string; action: string; message: string }>;
  labels: string[];
  evictions: string[];
}

/**
 * A sweep's I/O over a FakeNode: its pods and namespaces as the API, its records, its
 * netns (scanned by the real scanNetns, inspected and repaired by the real iptables
 * planning over the fake tables). `evictions` answers for those pods as the API server
 * refuses: "blocked" (a PDB's 429), "throttled" (APF's 429, Retry-After 2 s) or
 * "several-budgets" (500).
 */
export function fakeSweepIo(
  node: FakeNode,
  options: {
    evictions?: Map<string, "blocked" | "throttled" | "several-budgets">;
    now?: () => number;
    netconf?: Record<string, unknown>;
    /** No container runtime to ask (no CRI socket): pods without a record are placed by IP only. */
    noRuntime?: boolean;
    /** The backend meshcni's entry selects (nft, as ADD's auto finds it on a FakeNode). */
    backend?: Backend;
    /** The scan's time for netns visits (none: unbounded). */
    scanTime?: ScanTime;
    /** What reads a netns's rules, in place of the real inspection over the fake tables. */
    inspect?: ScanIo["inspect"];
    /** nf_tables' generation in the netns entered (none: every netns read each sweep). */
    generation?: ScanIo["generation"];
  } = {},
) {
  const writes: ApiWrites = { events: [], labels: [], evictions: [] };
  /** Redirects moved between backends (on the host, not through the API). */
  const moves: Array<{ netns: string; from: Backend; to: Backend }> = [];
  const name = (pod: V1Pod) => `${pod.metadata?.namespace}/${pod.metadata?.name}`;
  const io: SweepIo = {
    api: {
      listPods: async () => [...node.pods.values()].map((pod) => structuredClone(pod)),
      readNamespace: async (namespace) => node.namespaces.get(namespace) ?? { metadata: { name: namespace } },
      readService: async (namespace, name) => {
        const service = node.services.get(`${namespace}/${name}`);
        if (!service) throw new ApiStatusError(404, `services "${name}" not found`, undefined);
        return service;
      },
      createPodEvent: async (pod, event) =>
        void writes.events.push({ pod: name(pod), reason: event.reason, action: event.action, message: event.message }),
      labelPod: async (pod) => void writes.labels.push(name(pod)),
      evictPod: async (pod) => {
        const refusal = options.evictions?.get(name(pod));
        if (refusal === "blocked") return "blocked";
        if (refusal === "throttled") return { throttledMs: 2000 };
        if (refusal === "several-budgets")
          throw new ApiStatusError(
            500,
            "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
            undefined,
          );
        writes.evictions.push(name(pod));
        node.pods.delete(name(pod));
        return "evicted";
      },
    },
    records: node.recordStore(stateDir),
    netconf: () => parseNetConf(JSON.stringify({ cniVersion: "1.0.0", name: "k8s", type: "meshcni", ...options.netconf })),
    backend: async () => options.backend ?? "nft",
    scan: (targets) =>
      scanNetns(
        targets,
        { hostRoot: "/", netnsDirs: [netnsDir], ...(options.scanTime ? { time: options.scanTime } : {}) },
        {
          inNetns: (path, action) => node.enter(path, action),
          redirector: async (backend) => node.redirector(backend),
          addresses: () => node.currentAddresses(),
          identity: (path) => (node.netns.has(path) ? path : undefined),
          list: (dir) => [...node.netns.keys()].filter((path) => path.startsWith(`${dir}/`)).map((path) => path.slice(dir.length + 1)),
          inspect: options.inspect ?? inspectPlans,
          // The FakeNode holds meshcni's nat table alone: nothing goes around it.
          around: async () => [],
          generation: options.generation ?? (async () => undefined),
          locate: options.noRuntime ? undefined : (uids) => node.locate(uids),
        },
      ),
    redirect: async (netns, backend, plans) => void (await node.enter(netns, () => node.redirector(backend).apply(plans))),
    // The FakeNode keeps one nat table per netns for every backend: the move writes it anew and removes nothing.
    move: async (netns, from, to, plans) => {
      await node.enter(netns, () => node.redirector(to).apply(plans));
      moves.push({ netns, from, to });
    },
    netnsExists: (netns) => node.netns.has(netns),
    sandboxIds: async () => (options.noRuntime ? undefined : node.sandboxIds()),
    podNetns: options.noRuntime ? undefined : (uids) => node.locate(uids),
    now: options.now ?? (() => Date.now()),
  };
  return { io, writes, moves };
}
