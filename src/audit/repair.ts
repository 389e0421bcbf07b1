import type { V1Pod } from "@kubernetes/client-node";
import { isSamePod, type PodKey, podKeyOf } from "../pod-key.js";
import type { PodAudit } from "./classify.js";

export const repairPolicies = ["none", "label", "delete"] as const;
export type RepairPolicy = (typeof repairPolicies)[number];
export type RepairAction = "none" | "label" | "delete";

export const eventReason = "MeshRedirectMissing";
export const unprotectedLabel = "meshcni.io/unprotected";

function hasController(pod: V1Pod): boolean {
  return (pod.metadata?.ownerReferences ?? []).some((owner) => owner.controller === true);
}

/**
 * What to do about an unprotected pod, or why to leave it: never the agent's own pod,
 * never a pod already being deleted, never one an agent already labelled (the label
 * outlives an agent restart, so no pod is reported twice). `delete` lets the controller
 * recreate the pod with the redirect; a pod with no controller would be gone for good,
 * so it is labelled.
 */
export function repairAction(pod: V1Pod, policy: RepairPolicy, self: PodKey | undefined): RepairAction | { skip: string } {
  if (self && isSamePod(podKeyOf(pod), self)) return { skip: "the agent's own pod" };
  if (pod.metadata?.deletionTimestamp) return { skip: "already being deleted" };
  if (pod.metadata?.labels?.[unprotectedLabel] === "true") return { skip: `already labelled ${unprotectedLabel}=true` };
  if (policy === "delete" && !hasController(pod)) return "label";
  return policy;
}

export function eventMessage(audit: PodAudit, action: RepairAction, policy: RepairPolicy): string {
  const found =
    audit.status === "missing"
      ? "started without meshcni's iptables redirect"
      : "has an iptables redirect that differs from meshcni's plan";
  const consequence = "so its TCP traffic can bypass the mesh proxy";
  const next =
    action === "delete"
      ? "meshcni deletes it so its controller recreates it with the redirect"
      : action === "label"
        ? `meshcni labels it ${unprotectedLabel}=true${policy === "delete" ? " instead of deleting it: no controller would recreate it" : ""}`
        : "meshcni takes no action (--repair=none): restart the pod to get the redirect";
  return `This pod ${found} (${audit.details.join("; ")}), ${consequence}; ${next}.`;
}
