// Simulated nodes for `npm run bench scale`, as kwok makes them: Node objects (Ready, with
// meshcni's startup taint as a kubelet registers them) whose leases the bench renews as each
// kubelet would, with pods bound to them that never run. On each, meshcni's agent or
// kube-proxy runs as a host process of its own, with that node's identity.
import { join } from "node:path";
import {
  CoordinationV1Api,
  CoreV1Api,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  V1MicroTime,
  type V1Pod,
} from "@kubernetes/client-node";
import type { RealCluster } from "../test/kit/cluster/cluster.js";
import { paths, startupTaint } from "../test/kit/cluster/layout.js";
import { meshedPod } from "../test/kit/cluster/workloads.js";
import { until } from "../test/kit/common.js";

export const simulatedName = (index: number) => `sim-${index}`;
const simulatedLabel = "meshcni.test/simulated";
export const scaleDir = join(paths.dir, "scale");
/** The namespaces the simulated nodes' pods are spread over. */
const podNamespaces = Array.from({ length: 10 }, (_, index) => `scale-${index}`);

function nodeObject(index: number) {
  const name = simulatedName(index);
  const now = new Date();
  const resources = { cpu: "32", memory: "128Gi", pods: "110" };
  return {
    metadata: { name, labels: { "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", [simulatedLabel]: "true" } },
    spec: { taints: [{ key: startupTaint, effect: "NoSchedule" }] },
    // A Node's status may be set when it is created (kubelet registers that way).
    status: {
      capacity: resources,
      allocatable: resources,
      addresses: [{ type: "InternalIP", address: `10.250.${index >> 8}.${index & 255}` }],
      conditions: [
        { type: "Ready", status: "True", reason: "KubeletReady", message: "simulated", lastHeartbeatTime: now, lastTransitionTime: now },
      ],
    },
  };
}

/** A pod as an injector writes one, bound to a simulated node (never scheduled, never run). */
export function simulatedPod(node: number, index: number): V1Pod {
  const pod = meshedPod(`sim-${node}-${index}`, { namespace: podNamespaces[index % podNamespaces.length]!, sidecar: "native" }) as V1Pod;
  pod.spec = { ...pod.spec!, nodeName: simulatedName(node) };
  return pod;
}

/**
 * N simulated nodes with `podsPerNode` pods each, their leases renewed every 10 s (the node
 * lifecycle controller would otherwise call them unreachable and evict their pods).
 */
export class SimulatedNodes {
  private renewing: ReturnType<typeof setInterval> | undefined;
  private readonly core: CoreV1Api;
  private readonly leases: CoordinationV1Api;

  constructor(
    config: KubeConfig,
    readonly count: number,
    readonly podsPerNode: number,
  ) {
    this.core = config.makeApiClient(CoreV1Api);
    this.leases = config.makeApiClient(CoordinationV1Api);
  }

  private lease(index: number) {
    const name = simulatedName(index);
    return {
      metadata: { name, namespace: "kube-node-lease" },
      // A MicroTime: the API server takes exactly six fractional digits (a Date sends three).
      spec: { holderIdentity: name, leaseDurationSeconds: 40, renewTime: new V1MicroTime() },
    };
  }

  async create(): Promise<void> {
    for (const namespace of podNamespaces) {
      await this.core.createNamespace({ body: { metadata: { name: namespace } } }).catch(() => undefined);
      // No pod is admitted to a namespace before the controller manager has made its default ServiceAccount.
      const made = () =>
        this.core.readNamespacedServiceAccount({ name: "default", namespace }).then(
          () => true,
          () => false,
        );
      await until(made, 60_000, 250);
    }
    for (let index = 0; index < this.count; index++) {
      await this.core.createNode({ body: nodeObject(index) });
      await this.leases.createNamespacedLease({ namespace: "kube-node-lease", body: this.lease(index) });
    }
    this.renewing = setInterval(() => {
      for (let index = 0; index < this.count; index++)
        // A merge patch: a Lease's update needs its resourceVersion, a patch does not.
        this.leases
          .patchNamespacedLease(
            { name: simulatedName(index), namespace: "kube-node-lease", body: { spec: { renewTime: new V1MicroTime() } } },
            setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
          )
          .catch((error: Error) => console.warn(`lease of ${simulatedName(index)} not renewed: ${error.message}`));
    }, 10_000);
    const creates: Array<Promise<unknown>> = [];
    for (let node = 0; node < this.count; node++)
      for (let index = 0; index < this.podsPerNode; index++) {
        const pod = simulatedPod(node, index);
        creates.push(this.core.createNamespacedPod({ namespace: pod.metadata!.namespace!, body: pod }));
        if (creates.length >= 50) await Promise.all(creates.splice(0));
      }
    await Promise.all(creates);
  }

  /**
   * Every simulated node and its pods gone (the pods first: a Node's deletion does not take
   * them), a collection per namespace (one DELETE a pod would take minutes at kubectl's
   * rate), the leases renewed until the nodes are gone (or they go NotReady, and their pods
   * are tainted and evicted, while the next N is measured).
   */
  async remove(cluster: RealCluster): Promise<void> {
    for (const namespace of podNamespaces) await this.core.deleteCollectionNamespacedPod({ namespace, gracePeriodSeconds: 0 });
    await cluster.kubectl(["delete", "nodes", "-l", `${simulatedLabel}=true`, "--wait=true"]);
    clearInterval(this.renewing);
    const leases = Array.from({ length: this.count }, (_, index) => simulatedName(index));
    await cluster.kubectl(["delete", "leases", "-n", "kube-node-lease", "--ignore-not-found", ...leases]);
  }
}
