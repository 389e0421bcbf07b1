import type { PodObject, RealCluster } from "./cluster.js";
import { startupTaint } from "./layout.js";
import { chainedPlugins } from "./node.js";
import { type NodeLayout, onHost } from "./node-layout.js";

/**
 * What the multi-node suite reads of the cluster across its nodes: each node's taints and
 * MeshcniReady condition, where the agents are ready, and connections made from one pod to many.
 */

interface NodeObject {
  spec: { taints?: Array<{ key: string }>; unschedulable?: boolean };
  status: { conditions?: Array<{ type: string; status: string; reason?: string; message?: string }> };
}

/** Marks nodes unschedulable, or schedulable again, as an operator does before and after maintenance. */
export async function cordon(cluster: RealCluster, nodes: string[], on = true): Promise<void> {
  for (const node of nodes) await cluster.kubectl([on ? "cordon" : "uncordon", node]);
}

/** A node's startup taint and MeshcniReady condition as the API has them (undefined: no such Node). */
export async function meshcniState(
  cluster: RealCluster,
  node: string,
): Promise<{ tainted: boolean; ready?: string; reason?: string } | undefined> {
  const found = await cluster.get<NodeObject>("node", node).catch(() => undefined);
  if (!found) return undefined;
  const condition = (found.status.conditions ?? []).find((held) => held.type === "MeshcniReady");
  return {
    tainted: (found.spec.taints ?? []).some((taint) => taint.key === startupTaint),
    ...(condition ? { ready: condition.status, reason: condition.reason ?? "" } : {}),
  };
}

interface AgentPod extends PodObject {
  status: PodObject["status"] & { conditions?: Array<{ type: string; status: string }> };
}

/** The nodes on which an agent pod (not one being deleted) is Ready. */
export async function nodesWithReadyAgent(cluster: RealCluster): Promise<Set<string>> {
  const { items } = await cluster.get<{ items: AgentPod[] }>("pods", "-n", "meshcni", "-l", "app.kubernetes.io/name=meshcni");
  const ready = (pod: AgentPod) =>
    !pod.metadata.deletionTimestamp && (pod.status.conditions ?? []).some((held) => held.type === "Ready" && held.status === "True");
  return new Set(items.filter(ready).map((pod) => pod.spec.nodeName ?? ""));
}

/** The running pods `app=<app>` (none being deleted), each with its node. */
export async function runningPods(cluster: RealCluster, app: string): Promise<PodObject[]> {
  const { items } = await cluster.get<{ items: PodObject[] }>("pods", "-l", `app=${app}`);
  return items.filter((pod) => !pod.metadata.deletionTimestamp && pod.status.phase === "Running" && pod.status.podIP);
}

/** Real connections from a pod's app container to each target, all in one exec (`probe connect-each`): each answer, in order. */
export async function answersFromPod(cluster: RealCluster, pod: string, targets: string[]): Promise<string[]> {
  const output = await cluster.kubectl(["exec", pod, "-c", "app", "--", "/probe", "connect-each", ...targets]);
  return output
    .split("\n")
    .filter(Boolean)
    .map((line) => line.slice(line.indexOf("\t") + 1));
}

/** A plugin's entry in the node's primary conflist, which meshcni chains into in place (undefined: not chained). */
export function chainedEntry(layout: NodeLayout, type: string): Record<string, unknown> | undefined {
  return chainedPlugins(onHost(layout, "/etc/cni/net.d/10-primary.conflist")).find((plugin) => plugin.type === type);
}
