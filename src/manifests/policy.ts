import { readAgentFlags } from "../agent/flags.js";
import { conditionType } from "../agent/node/condition.js";
import { unprotectedLabel } from "../audit/repair.js";
import { parseTaint } from "../taint-spec.js";
import type { ManifestOptions } from "./options.js";

/** The claim a projected ServiceAccount token carries of the node its pod runs on (Kubernetes ≥ 1.30, on by default). */
export const nodeNameClaim = "authentication.kubernetes.io/node-name";

/** The plugin token's life the manifests' agent asks for (its flag's default): the policy allows no longer. */
export const pluginTokenSeconds = Number(readAgentFlags([], {}).text("plugin-token-seconds"));

/** Namespaces whose pods are never meshed: no eviction there, whatever a token asks. */
export const systemNamespaces = ["kube-system", "kube-public", "kube-node-lease"];

/** Names (checked as DNS labels where they are read: no quote can end the literal) as a CEL list. */
const celList = (names: string[]) => `[${names.map((name) => `'${name}'`).join(", ")}]`;

/**
 * A ValidatingAdmissionPolicy and its binding that hold the agent's ServiceAccount to its
 * own node, keyed on the node-name claim of its projected token (the pattern of upstream's
 * per-node-update e2e test): a Node patch only on its own Node and only of the startup
 * taint (with its effect), of its status only the MeshcniReady condition; a pod patch only
 * for a pod on its node, and only of meshcni's label; a plugin token only bound to its own
 * Node (or unbound, where the server cannot bind to Nodes), valid no longer than the agent
 * asks (its --plugin-token-seconds); an Event only about a pod, reported as its node. RBAC
 * grants the verbs cluster-wide (it cannot name "the caller's node"); this policy narrows
 * them. It matches the agent's ServiceAccount by name in any namespace, so a kustomize
 * overlay that moves the manifests to another namespace keeps it bound.
 * An Eviction does not name its pod's node, so no policy can scope it to one: it needs the
 * token to be a node's, the pod's own grace period, a namespace outside the system ones,
 * and stays subject to the pods' PodDisruptionBudgets.
 */
export function nodeScopePolicy(
  options: Pick<ManifestOptions, "startupTaint" | "evictNamespaces">,
  serviceAccount: string,
  labels: Record<string, string>,
) {
  // The agent's own reading of the flag: the policy allows exactly the taint it sets.
  const taint = options.startupTaint ? parseTaint(options.startupTaint) : undefined;
  return nodeScopePolicyFor({ taint, evictNamespaces: options.evictNamespaces, pluginTokenSeconds }, serviceAccount, labels);
}

/** The policy for a taint already read (the chart's generator passes placeholders Helm replaces). */
export function nodeScopePolicyFor(
  options: { taint: { key: string; effect: string } | undefined; evictNamespaces: string[] | undefined; pluginTokenSeconds: number },
  serviceAccount: string,
  labels: Record<string, string>,
) {
  const policyName = "meshcni-node-scope";
  const taint = options.taint;
  const key = taint?.key ?? "";
  const unchangedBut = (field: string, except: string) =>
    `(has(object.${field}) ? object.${field} : {}).filter(k, k != '${except}').all(k, k in (has(oldObject.${field}) ? oldObject.${field} : {}) && oldObject.${field}[k] == object.${field}[k]) && ` +
    `(has(oldObject.${field}) ? oldObject.${field} : {}).filter(k, k != '${except}').all(k, k in (has(object.${field}) ? object.${field} : {}))`;
  const otherConditions = (which: string) =>
    `(has(${which}.status.conditions) ? ${which}.status.conditions : []).filter(c, c.type != '${conditionType}')`;
  // Of any type: present in neither, or in both and equal. Only fields every server since 1.30 has (CEL checks them).
  const unchanged = (...paths: string[]) =>
    paths
      .map((path) => {
        const present = (root: string) =>
          path
            .split(".")
            .map((_, i, parts) => `has(${root}.${parts.slice(0, i + 1).join(".")})`)
            .join(" && ");
        return `(${present("object")}) == (${present("oldObject")}) && (!(${present("object")}) || object.${path} == oldObject.${path})`;
      })
      .join(" && ");
  const owners = unchanged("metadata.finalizers", "metadata.ownerReferences");
  const nodeSpec = unchanged("spec.podCIDR", "spec.podCIDRs", "spec.providerID", "spec.configSource", "spec.externalID");
  const nodeStatus = unchanged(
    ...[
      "capacity",
      "allocatable",
      "phase",
      "addresses",
      "daemonEndpoints",
      "nodeInfo",
      "images",
      "volumesInUse",
      "volumesAttached",
      "config",
    ].map((field) => `status.${field}`),
  );
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
      expression: `request.resource.resource != 'nodes' || (${owners} && ${nodeSpec})`,
      message: "meshcni's agent may not change its Node's finalizers, owner references or the rest of its spec",
    },
    {
      expression: `request.resource.resource != 'nodes' || (has(object.spec.taints) ? object.spec.taints : []).filter(t, t.key == '${key}').all(t, t.effect == '${taint?.effect ?? ""}')`,
      message: `meshcni's agent may set the startup taint${key ? ` ${key}` : ""} only with its effect ${taint?.effect ?? ""}`,
    },
    {
      expression:
        "request.resource.resource != 'nodes' || variables.subresource != 'status' || " +
        `(${otherConditions("object")} == ${otherConditions("oldObject")} && ${nodeStatus})`,
      message: `meshcni's agent may change only the ${conditionType} condition of its Node's status`,
    },
    {
      expression:
        "request.resource.resource != 'pods' || variables.subresource != '' || (has(oldObject.spec.nodeName) && oldObject.spec.nodeName == variables.node)",
      message: "meshcni's agent may change only pods on its own node",
    },
    {
      expression:
        "request.resource.resource != 'pods' || variables.subresource != '' || " +
        `(${unchangedBut("metadata.labels", unprotectedLabel)} && ${unchangedBut("metadata.annotations", "")} && object.spec == oldObject.spec && ${owners})`,
      message: `meshcni's agent may change only the ${unprotectedLabel} label of a pod`,
    },
    {
      expression: "variables.subresource != 'eviction' || !has(object.deleteOptions) || !has(object.deleteOptions.gracePeriodSeconds)",
      message: "meshcni's agent may evict a pod only with the pod's own grace period",
    },
    options.evictNamespaces && !options.evictNamespaces.includes("*")
      ? {
          expression: `variables.subresource != 'eviction' || request.namespace in ${celList(options.evictNamespaces)}`,
          message: `meshcni's agent may evict pods only in ${options.evictNamespaces.join(", ")} (--evict-namespaces)`,
        }
      : {
          expression: `variables.subresource != 'eviction' || !(request.namespace in ${celList(systemNamespaces)})`,
          message: `meshcni's agent may not evict pods of ${systemNamespaces.join(", ")} (they are never meshed)`,
        },
    {
      expression:
        // An unbound request reaches admission with an empty boundObjectRef.
        "variables.subresource != 'token' || !has(object.spec.boundObjectRef) || " +
        "(!has(object.spec.boundObjectRef.kind) && !has(object.spec.boundObjectRef.name)) || " +
        "(has(object.spec.boundObjectRef.kind) && object.spec.boundObjectRef.kind == 'Node' && " +
        "has(object.spec.boundObjectRef.name) && object.spec.boundObjectRef.name == variables.node)",
      message: "meshcni's agent may mint tokens bound only to its own Node",
    },
    {
      // Not the audience: the server fills in its own before admission, which the policy cannot know.
      // The server has defaulted it (an hour) before admission; the agent always asks for its life.
      expression: `variables.subresource != 'token' || (has(object.spec.expirationSeconds) && object.spec.expirationSeconds <= ${options.pluginTokenSeconds})`,
      message: `meshcni's agent may mint tokens valid for at most ${options.pluginTokenSeconds} s (its --plugin-token-seconds)`,
    },
    {
      // Who reads them (meshcni status) trusts an Event only from the node of the pod it names.
      expression:
        "request.resource.resource != 'events' || (object.involvedObject.kind == 'Pod' && " +
        "has(object.reportingInstance) && object.reportingInstance == variables.node && " +
        "has(object.source) && has(object.source.host) && object.source.host == variables.node)",
      message: "meshcni's agent may report Events only about pods, and only as its own node",
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
            {
              apiGroups: [""],
              apiVersions: ["v1"],
              operations: ["CREATE"],
              resources: ["pods/eviction", "serviceaccounts/token", "events"],
            },
          ],
        },
        matchConditions: [
          {
            name: "meshcni-agent",
            // By name in any namespace: an overlay moving the manifests (kustomize's namespace) cannot unbind it.
            expression: `request.userInfo.username.startsWith('system:serviceaccount:') && request.userInfo.username.endsWith(':${serviceAccount}')`,
          },
        ],
        variables: [
          // kube-apiserver leaves subResource out of the request when there is none: reading it would be an error.
          { name: "subresource", expression: "has(request.subResource) ? request.subResource : ''" },
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
