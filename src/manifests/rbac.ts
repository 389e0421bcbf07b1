import type { ManifestOptions } from "./options.js";

/** The ServiceAccount whose minted tokens the plugin's kubeconfig holds (the agent's default). */
export const pluginServiceAccount = "meshcni-plugin";

/** The `kubernetes` Service, whose ports a Linkerd control-plane pod skips (as linkerd-cni reads them): the plugin gets it, the agent watches it. */
const kubernetesService = (verbs: string[]): Rule => ({ apiGroups: [""], resources: ["services"], verbs, resourceNames: ["kubernetes"] });

/**
 * The RBAC rules, sized by what is turned on: the plugin reads pods and namespaces; the
 * agent lists and watches its node's pods and reports on them with Events; it patches
 * pods only to label them (label, or evict's fallback), creates evictions only for evict,
 * watches its node and patches its status for the MeshcniReady condition, and patches the
 * node itself only to lift a startup taint.
 */
export function clusterRules(options: Pick<ManifestOptions, "repair" | "startupTaint">): Rule[] {
  const patch = options.repair === "label" || options.repair === "evict";
  return [
    { apiGroups: [""], resources: ["pods"], verbs: ["get", "list", "watch", ...(patch ? ["patch"] : [])] },
    ...(options.repair === "evict" ? [{ apiGroups: [""], resources: ["pods/eviction"], verbs: ["create"] }] : []),
    // Get only: a namespace is read as a meshed pod of the node needs it, never watched (each change would go to every node).
    { apiGroups: [""], resources: ["namespaces"], verbs: ["get"] },
    kubernetesService(["get", "list", "watch"]),
    { apiGroups: [""], resources: ["events"], verbs: ["create"] },
    // Read one at a time only to lift the startup taint (its taints, then a conditional update); watched always.
    {
      apiGroups: [""],
      resources: ["nodes"],
      verbs: [...(options.startupTaint ? ["get"] : []), "list", "watch", ...(options.startupTaint ? ["patch"] : [])],
    },
    { apiGroups: [""], resources: ["nodes/status"], verbs: ["patch"] },
  ];
}

/**
 * What the plugin's own ServiceAccount may do, whose minted token is on each node's disk:
 * read the pod it adds, its namespace, and the `kubernetes` Service.
 */
export const pluginRules: Rule[] = [{ apiGroups: [""], resources: ["pods", "namespaces"], verbs: ["get"] }, kubernetesService(["get"])];

/**
 * In meshcni's namespace: read its own DaemonSet and watch its own ServiceAccount (for its
 * stop), mint the plugin's token (that ServiceAccount's only), read its own ConfigMap (the
 * netconf, as the API holds it).
 */
export const agentNamespaceRules = (agentAccount: string, pluginAccount: string, configMap: string): Rule[] => [
  { apiGroups: ["apps"], resources: ["daemonsets"], verbs: ["get"] },
  { apiGroups: [""], resources: ["serviceaccounts"], verbs: ["list", "watch"], resourceNames: [agentAccount] },
  { apiGroups: [""], resources: ["serviceaccounts/token"], verbs: ["create"], resourceNames: [pluginAccount] },
  { apiGroups: [""], resources: ["configmaps"], verbs: ["get"], resourceNames: [configMap] },
];

export type Rule = { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] };
