import type { CoreV1Event, V1Node, V1Pod } from "@kubernetes/client-node";
import { conditionType } from "../agent/condition.js";
import { eventReasons, unprotectedLabel } from "../audit/repair.js";
import { columns } from "../columns.js";

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
  /** What the agent found: MeshRedirectMissing or MeshRedirectDrifted; labelled: the label repair's mark. */
  reason: string;
  /** The agent's last word on the pod (its Event's message), or the label. */
  detail: string;
  at: string;
}

export interface ClusterView {
  nodes: NodeView[];
  unprotected: UnprotectedView[];
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

/**
 * The cluster as meshcni's agents report it: each node's condition, and every meshed pod
 * left without its redirect. A pod is listed when its agent marked it (the label repair's
 * label) or its newest meshcni Event is a Warning (a Normal one: redirected in place), it
 * is still the pod the Event names, and its node's condition still counts unprotected pods
 * (PodsUnprotected): an Event older than the agent's last sweep says nothing. Pure.
 */
export function clusterView(nodes: V1Node[], pods: V1Pod[], events: CoreV1Event[]): ClusterView {
  const views = nodes.map(nodeView).sort((a, b) => a.node.localeCompare(b.node));
  const byNode = new Map(views.map((view) => [view.node, view]));
  const newest = new Map<string, CoreV1Event>();
  const at = (event: CoreV1Event) => new Date(event.lastTimestamp ?? event.eventTime ?? event.firstTimestamp ?? 0).getTime();
  for (const event of events) {
    const uid = event.involvedObject.uid ?? "";
    const held = newest.get(uid);
    if (!held || at(event) >= at(held)) newest.set(uid, event);
  }
  const unprotected = pods.flatMap((pod): UnprotectedView[] => {
    const node = pod.spec?.nodeName ?? "";
    if (pod.metadata?.deletionTimestamp || byNode.get(node)?.reason !== "PodsUnprotected") return [];
    const event = newest.get(pod.metadata?.uid ?? "");
    const labelled = pod.metadata?.labels?.[unprotectedLabel] === "true";
    if (!labelled && event?.type !== "Warning") return [];
    return [
      {
        namespace: pod.metadata?.namespace ?? "",
        name: pod.metadata?.name ?? "",
        node,
        reason: event?.reason ?? "labelled",
        detail: event?.message ?? `labelled ${unprotectedLabel}=true`,
        at: event ? new Date(at(event)).toISOString() : "",
      },
    ];
  });
  unprotected.sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));
  return { nodes: views, unprotected };
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
  const withoutAgent = view.nodes.filter((node) => node.ready === "none").length;
  const notReady = view.nodes.filter((node) => node.ready === "False").length;
  lines.push(
    "",
    `${view.unprotected.length === 0 ? "no meshed pod is reported without its redirect" : `${view.unprotected.length} meshed pod(s) run without their redirect`}; ` +
      `${view.nodes.length} node(s), ${notReady} not ready, ${withoutAgent} without meshcni's condition`,
  );
  return `${lines.join("\n")}\n`;
}
