import type { CoreV1Event, V1Node, V1Pod } from "@kubernetes/client-node";
import { conditionType } from "../agent/node/condition.js";
import { eventReasons, unprotectedLabel } from "../audit/repair.js";
import { columns } from "../columns.js";
import { eventComponent } from "../kube/node-api.js";

/** A node as its agent last described it through its MeshcniReady condition. */
export interface NodeView {
  node: string;
  /** True, False, or none: no agent has written the condition (meshcni not installed there, or its agent never ran). */
  ready: "True" | "False" | "none";
  reason: string;
  version: string;
  message: string;
  since: string;
}

/** A meshed pod an agent reported without its redirect, and how. */
export interface UnprotectedView {
  namespace: string;
  name: string;
  node: string;
  /** Its newest meshcni Event's reason (MeshRedirectMissing or MeshRedirectDrifted), else how it is known: condition, labelled. */
  reason: string;
  /** The agent's last word on the pod (its Event's message), if any. */
  detail: string;
  at: string;
}

export interface ClusterView {
  nodes: NodeView[];
  unprotected: UnprotectedView[];
  /** Unprotected pods a node's condition counts beyond those it names. */
  unnamed: Array<{ node: string; count: number }>;
}

const timeOf = (value: Date | string | undefined) => (value === undefined ? "" : new Date(value).toISOString());

function nodeView(node: V1Node): NodeView {
  const condition = node.status?.conditions?.find((held) => held.type === conditionType);
  return {
    node: node.metadata?.name ?? "",
    ready: condition ? (condition.status === "True" ? "True" : "False") : "none",
    reason: condition?.reason ?? "",
    version: /^meshcni (\S+?)[:\s]/.exec(condition?.message ?? "")?.[1] ?? "",
    message: condition?.message ?? "",
    since: timeOf(condition?.lastTransitionTime),
  };
}

/** The pods a PodsUnprotected condition names (`N unprotected: ns/a, ns/b and M more`), and how many it does not. */
function namedInCondition(message: string): { pods: string[]; more: number } {
  const match = /; \d+ unprotected: (.*?)(?: and (\d+) more)?$/.exec(message);
  return { pods: match ? match[1]!.split(", ") : [], more: Number(match?.[2] ?? 0) };
}

/**
 * The cluster as meshcni's agents report it: each node's condition, and every meshed pod
 * left without its redirect. Which pods: those a node's PodsUnprotected condition names
 * (its agent's last sweeps: current), and those labelled by the label repair on such a
 * node; each with its newest meshcni Event, when there is one, for what was found and done.
 * An Event alone lists nothing: it may be older than the agent's last sweep. Pure.
 */
export function clusterView(nodes: V1Node[], labelled: V1Pod[], events: CoreV1Event[]): ClusterView {
  const views = nodes.map(nodeView).sort((a, b) => a.node.localeCompare(b.node));
  // A node not ready for another reason still names the pods its sweeps left unprotected.
  const unprotectedNodes = new Map(
    views
      .filter((view) => view.reason === "PodsUnprotected" || namedInCondition(view.message).pods.length > 0)
      .map((view) => [view.node, view]),
  );
  const at = (event: CoreV1Event) => new Date(event.lastTimestamp ?? event.eventTime ?? event.firstTimestamp ?? 0).getTime();
  // Keyed by the node that reported it: a pod's Event counts only from its own node's agent (anyone
  // may create Events; the node-scope policy holds meshcni's agents to their node's name).
  const newest = new Map<string, CoreV1Event>();
  for (const event of events) {
    if (event.reportingComponent !== eventComponent || !event.reportingInstance) continue;
    const key = `${event.reportingInstance} ${event.involvedObject.namespace}/${event.involvedObject.name}`;
    const held = newest.get(key);
    if (!held || at(event) >= at(held)) newest.set(key, event);
  }
  const listed = new Map<string, UnprotectedView>();
  const list = (key: string, node: string, known: string) => {
    if (listed.has(key)) return;
    const [namespace = "", name = ""] = key.split("/");
    const event = newest.get(`${node} ${key}`);
    listed.set(key, {
      namespace,
      name,
      node,
      reason: event?.reason ?? known,
      detail: event?.message ?? (known === "labelled" ? `labelled ${unprotectedLabel}=true` : "named by its node's MeshcniReady condition"),
      at: event ? new Date(at(event)).toISOString() : "",
    });
  };
  const unnamed: ClusterView["unnamed"] = [];
  for (const view of unprotectedNodes.values()) {
    const { pods, more } = namedInCondition(view.message);
    for (const key of pods) list(key, view.node, "condition");
    if (more > 0) unnamed.push({ node: view.node, count: more });
  }
  for (const pod of labelled) {
    const node = pod.spec?.nodeName ?? "";
    if (pod.metadata?.labels?.[unprotectedLabel] === "true" && unprotectedNodes.has(node) && !pod.metadata.deletionTimestamp)
      list(`${pod.metadata.namespace}/${pod.metadata.name}`, node, "labelled");
  }
  const unprotected = [...listed.values()].sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));
  return { nodes: views, unprotected, unnamed };
}

/** The Event reasons a sweep writes on a meshed pod without its redirect. */
export const unprotectedReasons = Object.values(eventReasons);

/** The view as two tables, nodes then unprotected pods, and a last line that answers the question. */
export function renderClusterView(view: ClusterView): string {
  const nodeRows = view.nodes.map((node) => [
    node.node,
    node.ready,
    node.reason,
    node.version,
    node.message.replace(/^meshcni \S+?:? /, ""),
  ]);
  const lines = columns([["NODE", "MESHCNI READY", "REASON", "VERSION", "MESSAGE"], ...nodeRows]).lines;
  if (view.unprotected.length > 0) {
    const podRows = view.unprotected.map((pod) => [pod.namespace, pod.name, pod.node, pod.reason, pod.detail]);
    lines.push("", ...columns([["NAMESPACE", "POD", "NODE", "REASON", "DETAIL"], ...podRows]).lines);
  }
  for (const { node, count } of view.unnamed)
    lines.push(`... and ${count} more on ${node} (its agent's meshcni_unprotected_pod series names them)`);
  const total = view.unprotected.length + view.unnamed.reduce((sum, { count }) => sum + count, 0);
  const withoutAgent = view.nodes.filter((node) => node.ready === "none").length;
  const notReady = view.nodes.filter((node) => node.ready === "False").length;
  const chainBroken = view.nodes.filter((node) => node.reason === "ChainBroken").length;
  lines.push(
    "",
    `${total === 0 ? "no meshed pod is reported without its redirect" : `${total} meshed pod(s) run without their redirect`}; ` +
      `${view.nodes.length} node(s), ${notReady} not ready${chainBroken > 0 ? ` (${chainBroken} with a CNI chain the runtime cannot run: no pod starts there)` : ""}, ` +
      `${withoutAgent} without meshcni's condition`,
  );
  return `${lines.join("\n")}\n`;
}
