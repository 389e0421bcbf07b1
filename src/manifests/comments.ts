import { agentHostMounts } from "./mounts.js";
import { agentNames, type ManifestOptions } from "./options.js";
import { pluginServiceAccount } from "./rbac.js";

/** A comment written above a field of an object of this kind: deploy/ says why each setting is so. */
export interface FieldComment {
  kind: string;
  /** Only the object of this name (when there are several of the kind). */
  name?: string;
  path: Array<string | number>;
  text: string;
}

/** Why the rendered objects are as they are, for the YAML (docs/ says more). */
export function manifestComments(options: ManifestOptions): FieldComment[] {
  const daemonSet = (path: Array<string | number>, text: string) => ({
    kind: "DaemonSet",
    path: ["spec", "template", "spec", ...path],
    text,
  });
  const container = (path: Array<string | number>, text: string) => daemonSet(["containers", 0, ...path], text);
  // By name: which mounts there are, and where, follows the options.
  const mounts = agentHostMounts(options).map(({ mount }) => mount.name);
  const mount = (mountName: string, text: string) =>
    mounts.includes(mountName) ? container(["volumeMounts", mounts.indexOf(mountName)], text) : undefined;
  const repairs = {
    redirect: "pods/patch is not granted: --repair redirect writes rules in the pod's netns, not through the API",
    label: "patch: --repair label labels an unprotected pod meshcni.io/unprotected=true",
    evict:
      "pods/eviction: --repair evict goes through the Eviction API, so PodDisruptionBudgets hold; patch labels a pod no controller would recreate",
    none: "no write to pods: --repair none only reports",
  };
  return [
    { kind: "Namespace", path: ["metadata", "labels"], text: "The agent writes host paths as root: the namespace admits privileged pods." },
    {
      kind: "ClusterRole",
      name: agentNames(options).agent,
      path: ["rules"],
      text: [
        "The agent's, sized by what is turned on:",
        "- it lists and watches its node's pods (a field selector RBAC cannot narrow), to answer the plugin and to audit;",
        "  it gets a pod its watch has not seen yet and the namespace of a meshed pod (watching none); it creates Events on",
        "  unprotected pods;",
        `- ${repairs[options.repair]};`,
        "- nodes list, watch and nodes/status patch: it watches its own node (a field selector RBAC cannot narrow) and",
        "  keeps its MeshcniReady condition;",
        options.startupTaint
          ? "- nodes get and patch: it lifts the startup taint once ready, again if kubelet registers the node anew with it."
          : "- no nodes get or patch: no startup taint.",
      ].join("\n"),
    },
    {
      kind: "ClusterRole",
      name: pluginServiceAccount,
      path: ["rules"],
      text: "The plugin's, whose token is on each node's disk (in its kubeconfig): it reads the pod being added and its namespace,\nwhen the agent cannot answer it. The agent mints that token (TokenRequest) and renews it before it expires.",
    },
    {
      kind: "ServiceAccount",
      name: pluginServiceAccount,
      path: ["automountServiceAccountToken"],
      text: "No pod runs as it: only the agent mints its tokens, for the plugin's kubeconfig.",
    },
    {
      kind: "Role",
      path: ["rules"],
      text: "The agent watches its own ServiceAccount (deleted: an uninstall) and gets its DaemonSet at a stop: still there, a\nrollout (keep everything); deleted, an uninstall. It mints the plugin's token: that ServiceAccount's only.",
    },
    {
      kind: "ConfigMap",
      name: agentNames(options).configMap,
      path: ["data", "cni_network_config"],
      text: "The plugin's entry (Linkerd's CNI_NETWORK_CONFIG): a drop-in of its own where the runtime loads drop-ins, else last in\nthe active conflist; __KUBECONFIG_FILEPATH__ becomes the kubeconfig's path on the host.",
    },
    daemonSet(["hostNetwork"], "The CNI dirs and the API server are reached as the node reaches them; /metrics listens on the node."),
    ...(options.tolerations
      ? []
      : [daemonSet(["tolerations"], "Every node, whatever its taints: a node without the agent starts pods unmeshed.")]),
    container(
      ["args"],
      `--repair ${options.repair}: what to do with a meshed pod found without its redirect (see docs/audit-and-repair.md).${
        options.startupTaint
          ? `\n--startup-taint: lifted once ready; add ${options.startupTaint} at node creation (see docs/agent.md).`
          : ""
      }`,
    ),
    container(["readinessProbe"], "Ready: the binary, the kubeconfig and meshcni's entry in the active CNI config are in place."),
    container(
      ["livenessProbe"],
      "Alive: the agent's reconcile loop runs (at least every resync); a broken config is not a liveness failure.",
    ),
    container(
      ["resources"],
      "npm run bench (agent-memory, agent-api): the agent peaks at ~79 MB with 10,000 namespaces and ~88 MB with\n30,000 and 250 pods on its node; a sweep's child process at ~69 MB more: both within this limit.",
    ),
    container(
      ["securityContext"],
      "SYS_ADMIN: a sweep enters pod netns (setns); NET_ADMIN: it reads and writes their nat tables;\nNET_RAW: iptables-legacy opens a raw socket. Root: it writes root-owned host dirs.",
    ),
    mount(
      "meshcni-state",
      "Sweeps record adopted and repaired pods and remove stale records; the agent answers the plugin on a socket here.",
    ),
    mount("netns", "Pod netns are bind mounts made after the agent starts."),
    mount(
      "cri-socket",
      "The runtime's CRI socket: which netns is whose pod, as kubelet asks it (a pod's IP is no proof:\nany pod with NET_ADMIN can claim another's). readOnly does not narrow it: a socket is connected\nto, not written, so the whole CRI is reachable; the agent calls ListPodSandbox and PodSandboxStatus.",
    ),
    mount("cni-bin-dir-1", "The runtime's other bin dirs (--extra-bin-dir), read only: the agent looks for the chain's plugins there."),
  ].filter((comment): comment is FieldComment => comment !== undefined);
}
