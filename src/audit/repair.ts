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
 * recreate the pod, else it labels; past the eviction budget it waits for a later sweep.
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
  return limits.evictionsLeft > 0 ? "evict" : { skip: "the eviction rate limit is reached: a later sweep evicts it" };
}

/** How an action went: "done", "blocked" (a PodDisruptionBudget: retried later), or what failed. */
export type RepairResult = "done" | "blocked" | { failed: string };

/** The Event on the pod: what was found, what meshcni did, what happens next. */
export function eventMessage(audit: PodAudit, action: RepairAction, policy: RepairPolicy, result: RepairResult): string {
  const found =
    audit.status === "missing"
      ? "This pod runs without meshcni's redirect, so its TCP traffic bypasses the mesh proxy"
      : "This pod's redirect differs from meshcni's plan, so some of its TCP traffic can bypass the mesh proxy";
  const failed = typeof result === "object" ? result.failed : undefined;
  const done = {
    redirect: failed
      ? `meshcni could not write the planned rules into its netns (${failed}); it tries again at the next audit`
      : "meshcni wrote the planned rules into its netns: new connections go through the proxy; connections opened before stay outside the mesh until they reconnect",
    evict: failed
      ? `meshcni could not evict it (${failed}); it tries again at the next audit`
      : "meshcni evicted it through the Eviction API (PodDisruptionBudgets hold) so its controller recreates it with the redirect",
    label: failed
      ? `meshcni could not label it (${failed})`
      : `meshcni labelled it ${unprotectedLabel}=true${policy === "evict" ? " instead of evicting it: no controller would recreate it" : ""}; restart it to get the redirect`,
    none: "meshcni takes no action (--repair=none): restart the pod to get the redirect",
  }[action];
  return `${found} (${audit.details.join("; ")}). ${done}.`;
}
