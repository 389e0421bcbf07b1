import type { RepairPolicy } from "../audit/repair.js";
import { buildInfo, imageRepository } from "../build-info.js";
import type { chainByChoices } from "../installer/dropin.js";

/** What an operator chooses when installing meshcni (`meshcni manifests` flags). */
export interface ManifestOptions {
  namespace: string;
  /** Whether the manifests hold the Namespace (privileged pod security): meshcni's own, or when asked (--create-namespace). */
  createNamespace: boolean;
  image: string;
  logLevel: "debug" | "info" | "warn" | "error";
  repair: RepairPolicy;
  /** With evict: the only namespaces the agent may evict in (agent flag and policy); undefined: any but the system ones. */
  evictNamespaces: string[] | undefined;
  startupTaint: string | undefined;
  /** The node's CNI config and bin dirs (each one setting: the env, the mount and the host path follow). */
  netDir: string;
  binDir: string;
  /** More dirs the runtime finds plugins in: mounted read-only, for the agent to check the chain. */
  extraBinDirs: string[];
  /** Where the runtime keeps pod netns. */
  netnsDir: string;
  /** The runtime's CRI socket ("": none); the socket alone is mounted (readOnly, which does not narrow what a socket lets through). */
  criSocket: string;
  resources: { cpuRequest: string; memoryRequest: string; memoryLimit: string };
  priorityClassName: string;
  nodeSelector: Record<string, string>;
  /** Undefined: tolerate every taint (a node without the agent starts pods unmeshed). */
  tolerations: Array<{ key: string; operator: "Equal" | "Exists"; value?: string; effect?: string }> | undefined;
  labels: Record<string, string>;
  /** The plugin's settings (Linkerd's netconf keys), over Linkerd's defaults. */
  linkerd: Record<string, unknown>;
  metricsPort: number;
  podMonitor: boolean;
  /** A PrometheusRule with meshcni's alerts. */
  prometheusRule: boolean;
  /** A ConfigMap with meshcni's Grafana dashboard, for Grafana's sidecar. */
  grafanaDashboard: boolean;
  /** Linkerd's names for the agent's objects, entry and files (agentNames): linkerd-cni's place, as `linkerd check` looks for it. */
  linkerdNames: boolean;
  /** The agent's --chain-by: a drop-in where the runtime loads drop-ins (auto), or the entry in the active config always. */
  chainBy: (typeof chainByChoices)[number];
}

export const defaultManifestOptions: ManifestOptions = {
  namespace: "meshcni",
  createNamespace: true,
  image: `${imageRepository}:${buildInfo.version}`,
  logLevel: "info",
  repair: "redirect",
  evictNamespaces: undefined,
  startupTaint: "meshcni.io/not-ready:NoSchedule",
  netDir: "/etc/cni/net.d",
  binDir: "/opt/cni/bin",
  extraBinDirs: [],
  netnsDir: "/var/run/netns",
  criSocket: "/run/containerd/containerd.sock",
  resources: { cpuRequest: "10m", memoryRequest: "96Mi", memoryLimit: "224Mi" },
  priorityClassName: "system-node-critical",
  nodeSelector: {},
  tolerations: undefined,
  labels: {},
  linkerd: {},
  metricsPort: 9911,
  podMonitor: false,
  prometheusRule: false,
  grafanaDashboard: false,
  linkerdNames: false,
  chainBy: "auto",
};

/** The name of meshcni's objects (its namespace by default, ServiceAccount, roles, DaemonSet), and its app label. */
export const name = "meshcni";

/** The label linkerd2-cni puts on each of its objects: Linkerd's control-plane checks and its injector leave them out. */
export const linkerdCniResourceLabel = "linkerd.io/cni-resource";

/**
 * The agent's names: meshcni's own, or Linkerd's (--linkerd-names): `linkerd check`'s CNI
 * checks get the ServiceAccount, ClusterRole, ClusterRoleBinding and DaemonSet `linkerd-cni`
 * and the ConfigMap `linkerd-cni-config` (linkerd2 pkg/healthcheck); the entry's type (so the
 * binary's name) and the plugin's kubeconfig are linkerd-cni's too, so its entry is meshcni's.
 */
export function agentNames(options: Pick<ManifestOptions, "linkerdNames">) {
  const agent = options.linkerdNames ? "linkerd-cni" : name;
  return { agent, configMap: `${agent}-config`, type: agent, kubeconfig: `ZZZ-${agent}-kubeconfig` };
}
