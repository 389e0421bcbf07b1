import type { RepairPolicy } from "../audit/repair.js";
import { buildInfo, imageRepository } from "../build-info.js";

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
};

/** The name of meshcni's objects (its namespace by default, ServiceAccount, roles, DaemonSet). */
export const name = "meshcni";
