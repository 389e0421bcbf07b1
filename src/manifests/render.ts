import { createHash } from "node:crypto";
import { buildInfo } from "../build-info.js";
import { kubeconfigPlaceholder } from "../installer/template.js";
import { linkerdDefaults } from "../mesh/defaults.js";
import { parseTaint } from "../taint-spec.js";
import { prometheusRule } from "./alerts.js";
import { dashboardConfigMap } from "./dashboard.js";
import { agentHostMounts } from "./mounts.js";
import { agentNames, linkerdCniResourceLabel, type ManifestOptions, name } from "./options.js";
import { nodeScopePolicy } from "./policy.js";
import { agentNamespaceRules, clusterRules, pluginRules, pluginServiceAccount } from "./rbac.js";

type K8sObject = { apiVersion: string; kind: string; metadata: Record<string, unknown>; [key: string]: unknown };

/** The labels on every object. */
function commonLabels(options: Pick<ManifestOptions, "labels" | "linkerdNames">): Record<string, string> {
  return {
    "app.kubernetes.io/name": name,
    "app.kubernetes.io/part-of": name,
    "app.kubernetes.io/version": buildInfo.version,
    ...(options.linkerdNames ? { [linkerdCniResourceLabel]: "true" } : {}),
    ...options.labels,
  };
}

/** The optional monitoring objects, each a kustomize component: the alerts and the Grafana dashboard. Pure. */
export function monitoringComponents(options: ManifestOptions): Record<"prometheus-rule" | "grafana-dashboard", K8sObject[]> {
  const meta = (objectName: string) => ({ name: objectName, namespace: options.namespace, labels: commonLabels(options) });
  return {
    "prometheus-rule": [prometheusRule(meta(name))],
    "grafana-dashboard": [dashboardConfigMap(meta(`${name}-dashboard`))],
  };
}

/** The agent's entry in the active config (CNI_NETWORK_CONFIG), Linkerd's defaults overridden. */
function networkConfig(options: Pick<ManifestOptions, "logLevel" | "linkerd" | "linkerdNames">): string {
  const { type } = agentNames(options);
  const entry = {
    name: type,
    type,
    log_level: options.logLevel,
    kubernetes: { kubeconfig: kubeconfigPlaceholder },
    linkerd: { ...linkerdDefaults, ...options.linkerd },
  };
  return JSON.stringify(entry, null, 2);
}

/**
 * Every taint by default; else the operator's and the startup taint's: the agent lifts
 * that taint, so it must run where the taint is.
 */
function tolerations(options: Pick<ManifestOptions, "tolerations" | "startupTaint">): Array<Record<string, string>> {
  if (!options.tolerations) return [{ operator: "Exists" }];
  if (!options.startupTaint) return options.tolerations;
  const { key, effect } = parseTaint(options.startupTaint);
  return [...options.tolerations, { key, operator: "Exists", effect }];
}

/** Every object `kubectl apply` needs, in apply order. Pure: options in, objects out. */
export function renderManifests(options: ManifestOptions): K8sObject[] {
  const labels = commonLabels(options);
  const names = agentNames(options);
  const meta = (extra: Record<string, unknown> = {}) => ({ name: names.agent, namespace: options.namespace, labels, ...extra });
  const selector = { "app.kubernetes.io/name": name };
  const mounts = agentHostMounts(options);
  const pluginAccount = pluginServiceAccount;
  const binding = (kind: "ClusterRoleBinding" | "RoleBinding", roleKind: "ClusterRole" | "Role", roleName: string, account: string) => ({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind,
    metadata: kind === "RoleBinding" ? meta({ name: roleName }) : { name: roleName, labels },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: roleKind, name: roleName },
    subjects: [{ kind: "ServiceAccount", name: account, namespace: options.namespace }],
  });
  const netconf = networkConfig(options);
  const objects: K8sObject[] = [
    ...(options.createNamespace
      ? [
          {
            apiVersion: "v1",
            kind: "Namespace",
            metadata: { name: options.namespace, labels: { ...labels, "pod-security.kubernetes.io/enforce": "privileged" } },
          },
        ]
      : []),
    { apiVersion: "v1", kind: "ServiceAccount", metadata: meta() },
    { apiVersion: "v1", kind: "ServiceAccount", metadata: meta({ name: pluginAccount }), automountServiceAccountToken: false },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: names.agent, labels },
      rules: clusterRules(options),
    },
    { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name: pluginAccount, labels }, rules: pluginRules },
    binding("ClusterRoleBinding", "ClusterRole", names.agent, names.agent),
    binding("ClusterRoleBinding", "ClusterRole", pluginAccount, pluginAccount),
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: meta(),
      rules: agentNamespaceRules(names.agent, pluginAccount, names.configMap),
    },
    binding("RoleBinding", "Role", names.agent, names.agent),
    ...nodeScopePolicy(options, names.agent, labels),
    {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: meta({ name: names.configMap }),
      data: { cni_network_config: netconf },
    },
    {
      apiVersion: "apps/v1",
      kind: "DaemonSet",
      metadata: meta(),
      spec: {
        selector: { matchLabels: selector },
        revisionHistoryLimit: 10,
        updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 1 } },
        template: {
          metadata: {
            labels,
            annotations: {
              "prometheus.io/scrape": "true",
              "prometheus.io/port": String(options.metricsPort),
              "prometheus.io/path": "/metrics",
              // A new netconf rolls the agents out (their env reads it at start).
              "checksum/config": createHash("sha256").update(netconf).digest("hex"),
            },
          },
          spec: {
            serviceAccountName: names.agent,
            hostNetwork: true,
            ...(options.priorityClassName ? { priorityClassName: options.priorityClassName } : {}),
            nodeSelector: { "kubernetes.io/os": "linux", ...options.nodeSelector },
            tolerations: tolerations(options),
            terminationGracePeriodSeconds: 30,
            securityContext: { seccompProfile: { type: "RuntimeDefault" } },
            containers: [
              {
                name: "install",
                image: options.image,
                imagePullPolicy: "IfNotPresent",
                command: ["/usr/local/bin/meshcni", "install"],
                args: [
                  "--listen",
                  `:${options.metricsPort}`,
                  "--repair",
                  options.repair,
                  ...(options.evictNamespaces ? ["--evict-namespaces", options.evictNamespaces.join(",")] : []),
                  "--log-level",
                  options.logLevel,
                  "--netns-dir",
                  options.netnsDir,
                  "--cri-socket",
                  options.criSocket,
                  ...(options.startupTaint ? ["--startup-taint", options.startupTaint] : []),
                  ...options.extraBinDirs.flatMap((dir) => ["--extra-bin-dir", dir]),
                  ...(options.chainBy === "auto" ? [] : ["--chain-by", options.chainBy]),
                ],
                env: [
                  ...["NODE_NAME:spec.nodeName", "POD_NAME:metadata.name", "POD_NAMESPACE:metadata.namespace"].map((pair) => {
                    const [variable, fieldPath] = pair.split(":");
                    return { name: variable, valueFrom: { fieldRef: { fieldPath } } };
                  }),
                  { name: "CONTAINER_MOUNT_PREFIX", value: "/host" },
                  { name: "DEST_CNI_NET_DIR", value: options.netDir },
                  { name: "DEST_CNI_BIN_DIR", value: options.binDir },
                  { name: "KUBECONFIG_FILE_NAME", value: names.kubeconfig },
                  { name: "CNI_NETWORK_CONFIG", valueFrom: { configMapKeyRef: { name: names.configMap, key: "cni_network_config" } } },
                  // kubelet's copy above can lag the ConfigMap: the agent checks it against the API and runs with the API's.
                  { name: "MESHCNI_CONFIG_MAP", value: names.configMap },
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
                volumeMounts: mounts.map(({ mount }) => mount),
              },
            ],
            volumes: mounts.map(({ volume }) => volume),
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
  const components = monitoringComponents(options);
  if (options.prometheusRule) objects.push(...components["prometheus-rule"]);
  if (options.grafanaDashboard) objects.push(...components["grafana-dashboard"]);
  return objects;
}
