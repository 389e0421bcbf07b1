import { conditionType } from "../agent/condition.js";
import { unprotectedLabel } from "../audit/repair.js";
import type { ManifestOptions } from "./options.js";

/** The claim a projected ServiceAccount token carries of the node its pod runs on (Kubernetes ≥ 1.30, on by default). */
export const nodeNameClaim = "authentication.kubernetes.io/node-name";

/** The startup taint's key, from `key[=value][:Effect]`. */
const taintKey = (taint: string | undefined) => (taint ? taint.split(/[=:]/)[0]! : "");

/**
 * A ValidatingAdmissionPolicy and its binding that hold the agent's ServiceAccount to its
 * own node, keyed on the node-name claim of its projected token (the pattern of upstream's
 * per-node-update e2e test): a Node patch only on its own Node and only of the startup
 * taint, of its status only the MeshcniReady condition; a pod patch only for a pod on its node, and only of meshcni's label. RBAC grants
 * the verbs cluster-wide (it cannot name "the caller's node"); this policy narrows them.
 * An Eviction does not name its pod's node, so no policy can scope it: it needs the token
 * to be a node's, and stays subject to the pods' PodDisruptionBudgets.
 */
export function nodeScopePolicy(
  options: Pick<ManifestOptions, "namespace" | "startupTaint">,
  serviceAccount: string,
  labels: Record<string, string>,
) {
  const policyName = `${serviceAccount}-node-scope`;
  const key = taintKey(options.startupTaint);
  const unchangedBut = (field: string, except: string) =>
    `(has(object.${field}) ? object.${field} : {}).filter(k, k != '${except}').all(k, k in (has(oldObject.${field}) ? oldObject.${field} : {}) && oldObject.${field}[k] == object.${field}[k]) && ` +
    `(has(oldObject.${field}) ? oldObject.${field} : {}).filter(k, k != '${except}').all(k, k in (has(object.${field}) ? object.${field} : {}))`;
  const otherConditions = (which: string) =>
    `(has(${which}.status.conditions) ? ${which}.status.conditions : []).filter(c, c.type != '${conditionType}')`;
  const otherTaints = (which: string) => `(has(${which}.spec.taints) ? ${which}.spec.taints : []).filter(t, t.key != '${key}')`;
  const validations = [
    {
      expression: "variables.node != ''",
      message: `meshcni's agent acts only with a token bound to its pod on a node (the ${nodeNameClaim} claim)`,
    },
    {
      expression: "request.resource.resource != 'nodes' || object.metadata.name == variables.node",
      message: "meshcni's agent may change only its own Node",
    },
    {
      expression:
        `request.resource.resource != 'nodes' || (${otherTaints("object")} == ${otherTaints("oldObject")} && ` +
        `${unchangedBut("metadata.labels", "")} && ${unchangedBut("metadata.annotations", "")} && ` +
        "(has(object.spec.unschedulable) ? object.spec.unschedulable : false) == (has(oldObject.spec.unschedulable) ? oldObject.spec.unschedulable : false))",
      message: `meshcni's agent may change only the startup taint${key ? ` ${key}` : ""} on its Node`,
    },
    {
      expression:
        "request.resource.resource != 'nodes' || request.subResource != 'status' || " +
        `${otherConditions("object")} == ${otherConditions("oldObject")}`,
      message: `meshcni's agent may change only the ${conditionType} condition of its Node's status`,
    },
    {
      expression:
        "request.resource.resource != 'pods' || request.subResource != '' || (has(oldObject.spec.nodeName) && oldObject.spec.nodeName == variables.node)",
      message: "meshcni's agent may change only pods on its own node",
    },
    {
      expression:
        "request.resource.resource != 'pods' || request.subResource != '' || " +
        `(${unchangedBut("metadata.labels", unprotectedLabel)} && ${unchangedBut("metadata.annotations", "")} && object.spec == oldObject.spec)`,
      message: `meshcni's agent may change only the ${unprotectedLabel} label of a pod`,
    },
  ];
  return [
    {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingAdmissionPolicy",
      metadata: { name: policyName, labels },
      spec: {
        failurePolicy: "Fail",
        matchConstraints: {
          resourceRules: [
            { apiGroups: [""], apiVersions: ["v1"], operations: ["UPDATE"], resources: ["nodes", "nodes/status", "pods"] },
            { apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods/eviction"] },
          ],
        },
        matchConditions: [
          {
            name: "meshcni-agent",
            expression: `request.userInfo.username == 'system:serviceaccount:${options.namespace}:${serviceAccount}'`,
          },
        ],
        variables: [
          {
            name: "node",
            expression: `has(request.userInfo.extra) && '${nodeNameClaim}' in request.userInfo.extra && size(request.userInfo.extra['${nodeNameClaim}']) > 0 ? request.userInfo.extra['${nodeNameClaim}'][0] : ''`,
          },
        ],
        validations,
      },
    },
    {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingAdmissionPolicyBinding",
      metadata: { name: policyName, labels },
      spec: { policyName, validationActions: ["Deny"] },
    },
  ];
}
