import type { V1Pod } from "@kubernetes/client-node";
import { isSamePod, type PodKey, podKeyOf } from "../pod-key.js";
import type { PodAudit } from "./classify.js";

/**
 * What to do about a meshed pod without its redirect. `redirect` (the default, as
 * Istio's CNI does) writes the plan into the running pod's netns; `evict` goes through
 * the Eviction API so PodDisruptionBudgets hold; `label` marks it; `none` only reports.
 */
export const repairPolicies = ["redirect", "evict", "label", "none"] as const;
export type RepairPolicy = (typeof repairPolicies)[number];
export type RepairAction = RepairPolicy;

export const eventReasons = { missing: "MeshRedirectMissing", drifted: "MeshRedirectDrifted" } as const;
/** The Event's action: what meshcni did, or tried, about the pod. */
export const eventActions = { redirect: "WriteRedirect", evict: "Evict", label: "Label", none: "None" } as const;
export const unprotectedLabel = "meshcni.io/unprotected";

/** What one sweep may do beyond the policy: who it is, what it must leave alone, how many evictions are left. */
export interface RepairLimits {
  self: PodKey | undefined;
  excludeNamespaces: ReadonlySet<string>;
  /** With evict: the only namespaces it evicts in (the operator's --evict-namespaces); undefined: any. */
  evictNamespaces?: ReadonlySet<string> | undefined;
  /** Pods acted on recently (by the agent's earlier sweeps): reported, left alone. */
  skipUids: ReadonlySet<string>;
  evictionsLeft: number;
}

function hasController(pod: V1Pod): boolean {
  return (pod.metadata?.ownerReferences ?? []).some((owner) => owner.controller === true);
}

/**
 * What to do about an unprotected pod, or why to leave it: never the agent's own pod, a
 * pod being deleted, one already labelled (the label outlives an agent restart), one
 * acted on recently, or one in an excluded namespace. `evict` needs a controller to
 * recreate the pod, else it labels; outside the namespaces evictions are allowed in, it
 * leaves the pod; past the eviction budget it waits for a later sweep.
 */
export function repairAction(pod: V1Pod, policy: RepairPolicy, limits: RepairLimits): RepairAction | { skip: string } {
  const key = podKeyOf(pod);
  if (limits.self && isSamePod(key, limits.self)) return { skip: "the agent's own pod" };
  if (pod.metadata?.deletionTimestamp) return { skip: "already being deleted" };
  if (pod.metadata?.labels?.[unprotectedLabel] === "true") return { skip: `already labelled ${unprotectedLabel}=true` };
  if (key.uid && limits.skipUids.has(key.uid)) return { skip: "acted on recently" };
  if (limits.excludeNamespaces.has(key.namespace)) return { skip: `namespace ${key.namespace} is excluded from repair` };
  if (policy !== "evict") return policy;
  if (!hasController(pod)) return "label";
  // The mesh's own control plane, and meshcni's agents on other nodes: never taken down by an agent.
  const labels = pod.metadata?.labels ?? {};
  if (labels["linkerd.io/control-plane-component"] || labels["linkerd.io/control-plane-ns"] === key.namespace)
    return { skip: "meshcni never evicts Linkerd's control plane or its namespace: restart the pod to get the redirect" };
  if (limits.self && key.namespace === limits.self.namespace)
    return { skip: `meshcni never evicts in its own namespace ${key.namespace}: restart the pod to get the redirect` };
  if (limits.evictNamespaces && !limits.evictNamespaces.has(key.namespace))
    return {
      skip: `meshcni does not evict in namespace ${key.namespace} (not in --evict-namespaces): restart the pod to get the redirect`,
    };
  return limits.evictionsLeft > 0 ? "evict" : { skip: "the eviction rate limit is reached: a later sweep evicts it" };
}

/**
 * How an action went: "done"; "blocked" (a PodDisruptionBudget: retried at the next sweep);
 * throttled (the API server asked to wait this long: retried then); or what failed, and
 * whether it is for good (an eviction refused because several budgets match the pod).
 */
export type RepairResult = "done" | "blocked" | { throttledMs: number } | { failed: string; permanent?: true | undefined };

/** A result in one word, as metrics and tables say it. */
export function resultKind(result: RepairResult | undefined): "done" | "blocked" | "throttled" | "failed" {
  if (result === undefined || typeof result === "string") return result ?? "done";
  return "throttledMs" in result ? "throttled" : "failed";
}

/**
 * The Event on the pod: what was found, what meshcni did, and what happens next, in words
 * that match what it will do: `retryMinutes` is when the agent acts on the pod again
 * (undefined for a sweep run by hand, which does not come back by itself).
 */
export function eventMessage(
  audit: PodAudit,
  action: RepairAction,
  policy: RepairPolicy,
  result: RepairResult,
  retryMinutes?: number,
): string {
  const found =
    audit.status === "missing"
      ? "This pod runs without meshcni's redirect, so its TCP traffic bypasses the mesh proxy"
      : "This pod's redirect differs from meshcni's plan, so some of its TCP traffic can bypass the mesh proxy";
  const failure = typeof result === "object" && "failed" in result ? { ...result, failed: result.failed.replace(/\.+$/, "") } : undefined;
  const again = retryMinutes === undefined ? "run meshcni audit --repair again to retry" : `it tries again in ${retryMinutes} minutes`;
  const done = {
    redirect: failure
      ? `meshcni could not write the planned rules into its netns (${failure.failed}); ${again}`
      : "meshcni wrote the planned rules into its netns: new connections go through the proxy; connections opened before stay outside the mesh until they reconnect",
    evict: failure?.permanent
      ? `meshcni cannot evict it: ${failure.failed}. It will not try again: give the pod a single PodDisruptionBudget, or restart it to get the redirect`
      : failure
        ? `meshcni could not evict it (${failure.failed}); ${again}`
        : "meshcni evicted it through the Eviction API (PodDisruptionBudgets hold) so its controller recreates it with the redirect",
    label: failure
      ? `meshcni could not label it (${failure.failed})`
      : `meshcni labelled it ${unprotectedLabel}=true${policy === "evict" ? " instead of evicting it: no controller would recreate it" : ""}; restart it to get the redirect`,
    none: "meshcni takes no action (--repair=none): restart the pod to get the redirect",
  }[action];
  return `${found} (${audit.details.join("; ")}). ${done}.`;
}

/** Why a redirect in place leaves a pod unprotected when rules of another's send its TCP around meshcni's. */
export const aroundUnremoved =
  "rules that are not meshcni's send its TCP around the redirect, and meshcni removes only its own: restart the pod, or use --repair evict";
