import type { RepairPolicy } from "../audit/repair.js";
import { buildInfo, imageRepository } from "../build-info.js";
import { linkerdDefaults } from "../mesh/defaults.js";

/** What an operator chooses when installing meshcni (`meshcni manifests` flags). */
export interface ManifestOptions {
  namespace: string;
  image: string;
  logLevel: "debug" | "info" | "warn" | "error";
  repair: RepairPolicy;
  startupTaint: string | undefined;
  /** The node's CNI config and bin dirs (each one setting: the env, the mount and the host path follow). */
  netDir: string;
  binDir: string;
  /** Where the runtime keeps pod netns. */
  netnsDir: string;
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
}

export const defaultManifestOptions: ManifestOptions = {
  namespace: "meshcni",
  image: `${imageRepository}:${buildInfo.version}`,
  logLevel: "info",
  repair: "redirect",
  startupTaint: "meshcni.io/not-ready:NoSchedule",
  netDir: "/etc/cni/net.d",
  binDir: "/opt/cni/bin",
  netnsDir: "/var/run/netns",
  resources: { cpuRequest: "10m", memoryRequest: "96Mi", memoryLimit: "224Mi" },
  priorityClassName: "system-node-critical",
  nodeSelector: {},
  tolerations: undefined,
  labels: {},
  linkerd: {},
  metricsPort: 9911,
  podMonitor: false,
};

const name = "meshcni";
/** The ServiceAccount whose minted tokens the plugin's kubeconfig holds (the agent's default). */
export const pluginServiceAccount = "meshcni-plugin";
const stateDir = "/var/run/meshcni";
type K8sObject = { apiVersion: string; kind: string; metadata: Record<string, unknown>; [key: string]: unknown };

/**
 * The RBAC rules, sized by what is turned on: the plugin reads pods and namespaces; the
 * agent lists and watches its node's pods and reports on them with Events; it patches
 * pods only to label them (label, or evict's fallback), creates evictions only for evict,
 * reads and patches its node only to lift a startup taint.
 */
export function clusterRules(options: Pick<ManifestOptions, "repair" | "startupTaint">): Rule[] {
  const patch = options.repair === "label" || options.repair === "evict";
  return [
    { apiGroups: [""], resources: ["pods"], verbs: ["get", "list", "watch", ...(patch ? ["patch"] : [])] },
    ...(options.repair === "evict" ? [{ apiGroups: [""], resources: ["pods/eviction"], verbs: ["create"] }] : []),
    { apiGroups: [""], resources: ["namespaces"], verbs: ["get", "list", "watch"] },
    { apiGroups: [""], resources: ["events"], verbs: ["create"] },
    ...(options.startupTaint ? [{ apiGroups: [""], resources: ["nodes"], verbs: ["get", "patch"] }] : []),
  ];
}

/** What the plugin's own ServiceAccount may do, whose minted token is on each node's disk: read the pod it adds and its namespace. */
export const pluginRules: Rule[] = [{ apiGroups: [""], resources: ["pods", "namespaces"], verbs: ["get"] }];

/** In meshcni's namespace: read its own DaemonSet (at a stop), mint the plugin's token (that ServiceAccount's only). */
export const agentNamespaceRules = (pluginAccount: string): Rule[] => [
  { apiGroups: ["apps"], resources: ["daemonsets"], verbs: ["get"] },
  { apiGroups: [""], resources: ["serviceaccounts/token"], verbs: ["create"], resourceNames: [pluginAccount] },
];

export type Rule = { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] };

/** The agent's entry in the active config (CNI_NETWORK_CONFIG), Linkerd's defaults overridden. */
export function networkConfig(options: Pick<ManifestOptions, "logLevel" | "linkerd">): string {
  const entry = {
    name,
    type: name,
    log_level: options.logLevel,
    kubernetes: { kubeconfig: "__KUBECONFIG_FILEPATH__" },
    linkerd: { ...linkerdDefaults, ...options.linkerd },
  };
  return JSON.stringify(entry, null, 2);
}

/** A comment written above a field of an object of this kind: deploy/ says why each setting is so. */
export interface FieldComment {
  kind: string;
  /** Only the object of this name (when there are several of the kind). */
  name?: string;
  path: Array<string | number>;
  text: string;
}

/** Why the rendered objects are as they are, for the YAML (the README says more). */
export function manifestComments(options: ManifestOptions): FieldComment[] {
  const daemonSet = (path: Array<string | number>, text: string) => ({
    kind: "DaemonSet",
    path: ["spec", "template", "spec", ...path],
    text,
  });
  const container = (path: Array<string | number>, text: string) => daemonSet(["containers", 0, ...path], text);
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
      name,
      path: ["rules"],
      text: [
        "The agent's, sized by what is turned on:",
        "- it lists and watches its node's pods (a field selector RBAC cannot narrow) and every namespace, to answer the plugin",
        "  and to audit; it gets a pod or namespace its watches have not seen yet; it creates Events on unprotected pods;",
        `- ${repairs[options.repair]};`,
        options.startupTaint
          ? "- nodes get and patch: it lifts the startup taint from its node once ready."
          : "- no node access: no startup taint.",
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
      text: "At a stop the agent gets its DaemonSet: still there, a rollout (keep everything); deleted, an uninstall.\nIt mints the plugin's token: that ServiceAccount's only.",
    },
    {
      kind: "ConfigMap",
      path: ["data", "cni_network_config"],
      text: "The plugin's entry in the active conflist (Linkerd's CNI_NETWORK_CONFIG);\n__KUBECONFIG_FILEPATH__ becomes the kubeconfig's path on the host.",
    },
    daemonSet(["hostNetwork"], "The CNI dirs and the API server are reached as the node reaches them; /metrics listens on the node."),
    ...(options.tolerations
      ? []
      : [daemonSet(["tolerations"], "Every node, whatever its taints: a node without the agent starts pods unmeshed.")]),
    container(
      ["args"],
      `--repair ${options.repair}: what to do with a meshed pod found without its redirect (see the README).${
        options.startupTaint ? `\n--startup-taint: lifted once ready; add ${options.startupTaint} at node creation (see the README).` : ""
      }`,
    ),
    container(["readinessProbe"], "Ready: the binary, the kubeconfig and meshcni's entry in the active CNI config are in place."),
    container(
      ["livenessProbe"],
      "Alive: the agent's reconcile loop runs (at least every resync); a broken config is not a liveness failure.",
    ),
    container(
      ["resources"],
      "npm run bench (agent-memory): the agent peaks at ~76 MB with 100 meshed pods (and its caches), a sweep's\nchild process at ~56 MB more, both within this limit.",
    ),
    container(
      ["securityContext"],
      "SYS_ADMIN: a sweep enters pod netns (setns); NET_ADMIN: it reads and writes their nat tables;\nNET_RAW: iptables-legacy opens a raw socket. Root: it writes root-owned host dirs.",
    ),
    container(
      ["volumeMounts", 2],
      "Sweeps record adopted and repaired pods and remove stale records; the agent answers the plugin on a socket here.",
    ),
    container(["volumeMounts", 3], "Pod netns are bind mounts made after the agent starts."),
  ];
}

/** Every object `kubectl apply` needs, in apply order. Pure: options in, objects out. */
export function renderManifests(options: ManifestOptions): K8sObject[] {
  const labels = {
    "app.kubernetes.io/name": name,
    "app.kubernetes.io/part-of": name,
    "app.kubernetes.io/version": buildInfo.version,
    ...options.labels,
  };
  const meta = (extra: Record<string, unknown> = {}) => ({ name, namespace: options.namespace, labels, ...extra });
  const selector = { "app.kubernetes.io/name": name };
  const onHost = (path: string) => `/host${path}`;
  const hostDir = (volume: string, path: string) => ({ name: volume, hostPath: { path, type: "DirectoryOrCreate" } });
  const pluginAccount = pluginServiceAccount;
  const binding = (kind: "ClusterRoleBinding" | "RoleBinding", roleKind: "ClusterRole" | "Role", roleName: string, account: string) => ({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind,
    metadata: kind === "RoleBinding" ? meta({ name: roleName }) : { name: roleName, labels },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: roleKind, name: roleName },
    subjects: [{ kind: "ServiceAccount", name: account, namespace: options.namespace }],
  });
  const objects: K8sObject[] = [
    {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: options.namespace, labels: { ...labels, "pod-security.kubernetes.io/enforce": "privileged" } },
    },
    { apiVersion: "v1", kind: "ServiceAccount", metadata: meta() },
    { apiVersion: "v1", kind: "ServiceAccount", metadata: meta({ name: pluginAccount }), automountServiceAccountToken: false },
    { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name, labels }, rules: clusterRules(options) },
    { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name: pluginAccount, labels }, rules: pluginRules },
    binding("ClusterRoleBinding", "ClusterRole", name, name),
    binding("ClusterRoleBinding", "ClusterRole", pluginAccount, pluginAccount),
    { apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", metadata: meta(), rules: agentNamespaceRules(pluginAccount) },
    binding("RoleBinding", "Role", name, name),
    {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: meta({ name: `${name}-config` }),
      data: { cni_network_config: networkConfig(options) },
    },
    {
      apiVersion: "apps/v1",
      kind: "DaemonSet",
      metadata: meta(),
      spec: {
        selector: { matchLabels: selector },
        updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 1 } },
        template: {
          metadata: {
            labels,
            annotations: {
              "prometheus.io/scrape": "true",
              "prometheus.io/port": String(options.metricsPort),
              "prometheus.io/path": "/metrics",
            },
          },
          spec: {
            serviceAccountName: name,
            hostNetwork: true,
            priorityClassName: options.priorityClassName,
            nodeSelector: { "kubernetes.io/os": "linux", ...options.nodeSelector },
            tolerations: options.tolerations ?? [{ operator: "Exists" }],
            terminationGracePeriodSeconds: 30,
            securityContext: { seccompProfile: { type: "RuntimeDefault" } },
            containers: [
              {
                name: "install",
                image: options.image,
                command: ["/usr/local/bin/meshcni", "install"],
                args: [
                  "--listen",
                  `:${options.metricsPort}`,
                  "--repair",
                  options.repair,
                  "--log-level",
                  options.logLevel,
                  "--netns-dir",
                  options.netnsDir,
                  ...(options.startupTaint ? ["--startup-taint", options.startupTaint] : []),
                ],
                env: [
                  ...["NODE_NAME:spec.nodeName", "POD_NAME:metadata.name", "POD_NAMESPACE:metadata.namespace"].map((pair) => {
                    const [variable, fieldPath] = pair.split(":");
                    return { name: variable, valueFrom: { fieldRef: { fieldPath } } };
                  }),
                  { name: "CONTAINER_MOUNT_PREFIX", value: "/host" },
                  { name: "DEST_CNI_NET_DIR", value: options.netDir },
                  { name: "DEST_CNI_BIN_DIR", value: options.binDir },
                  { name: "KUBECONFIG_FILE_NAME", value: "ZZZ-meshcni-kubeconfig" },
                  { name: "CNI_NETWORK_CONFIG", valueFrom: { configMapKeyRef: { name: `${name}-config`, key: "cni_network_config" } } },
                ],
                ports: [{ name: "metrics", containerPort: options.metricsPort, protocol: "TCP" }],
                readinessProbe: { httpGet: { path: "/readyz", port: "metrics" }, periodSeconds: 5, failureThreshold: 1 },
                livenessProbe: { httpGet: { path: "/healthz", port: "metrics" }, periodSeconds: 10, failureThreshold: 6 },
                resources: {
                  requests: { cpu: options.resources.cpuRequest, memory: options.resources.memoryRequest },
                  limits: { memory: options.resources.memoryLimit },
                },
                securityContext: {
                  runAsUser: 0,
                  readOnlyRootFilesystem: true,
                  allowPrivilegeEscalation: false,
                  capabilities: { drop: ["ALL"], add: ["SYS_ADMIN", "NET_ADMIN", "NET_RAW"] },
                },
                volumeMounts: [
                  { name: "cni-net-dir", mountPath: onHost(options.netDir) },
                  { name: "cni-bin-dir", mountPath: onHost(options.binDir) },
                  { name: "meshcni-state", mountPath: onHost(stateDir) },
                  { name: "netns", mountPath: onHost(options.netnsDir), readOnly: true, mountPropagation: "HostToContainer" },
                ],
              },
            ],
            volumes: [
              hostDir("cni-net-dir", options.netDir),
              hostDir("cni-bin-dir", options.binDir),
              hostDir("meshcni-state", stateDir),
              hostDir("netns", options.netnsDir),
            ],
          },
        },
      },
    },
  ];
  if (options.podMonitor) {
    objects.push({
      apiVersion: "monitoring.coreos.com/v1",
      kind: "PodMonitor",
      metadata: meta(),
      spec: { selector: { matchLabels: selector }, podMetricsEndpoints: [{ port: "metrics", path: "/metrics", interval: "30s" }] },
    });
  }
  return objects;
}
