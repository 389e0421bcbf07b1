import { agentTimeoutMs } from "../kube/agent-connection.js";

/** A panel of the dashboard: its title, what it shows, its queries (legend per query) and its place on the 24-wide grid. */
interface Panel {
  title: string;
  description: string;
  type: "stat" | "timeseries" | "table";
  unit?: string;
  queries: Array<[expr: string, legend: string]>;
  grid: { x: number; y: number; w: number; h: number };
}

const nodes = 'node=~"$node"';

const panels: Panel[] = [
  {
    title: "Meshed pods without their redirect",
    description: "Meshed pods whose netns the last sweep found missing or drifted, and that were not redirected in place. Should be 0.",
    type: "stat",
    queries: [[`sum(meshcni_unprotected_pod{${nodes}}) or vector(0)`, "unprotected"]],
    grid: { x: 0, y: 0, w: 6, h: 5 },
  },
  {
    title: "Nodes not ready",
    description:
      "Agents whose binary, plugin kubeconfig or entry in the active CNI config is missing (the node's MeshcniReady condition is False).",
    type: "stat",
    queries: [[`count(meshcni_ready{${nodes}} == 0) or vector(0)`, "not ready"]],
    grid: { x: 6, y: 0, w: 6, h: 5 },
  },
  {
    title: "Meshed pods by status",
    description:
      "This node's meshed pods as the agent's sweeps found them: protected and adopted are redirected; missing and drifted are not; unknown could not be looked into.",
    type: "timeseries",
    queries: [[`sum by (status) (meshcni_meshed_pods{${nodes}})`, "{{status}}"]],
    grid: { x: 12, y: 0, w: 12, h: 8 },
  },
  {
    title: "Unprotected pods",
    description: "Each meshed pod left without its redirect, with its node: the pod's Events say what the agent did.",
    type: "table",
    queries: [[`max by (node, pod_namespace, pod_name, status) (meshcni_unprotected_pod{${nodes}})`, ""]],
    grid: { x: 0, y: 5, w: 12, h: 8 },
  },
  {
    title: "Re-chains",
    description: "meshcni's entry written back into the active CNI config after another writer dropped it, by cause.",
    type: "timeseries",
    unit: "ops",
    queries: [[`sum by (cause) (rate(meshcni_rechains_total{${nodes}}[5m]))`, "{{cause}}"]],
    grid: { x: 0, y: 13, w: 8, h: 8 },
  },
  {
    title: "Re-chain latency (p99)",
    description: "From the config dir's change to meshcni's entry written back: the window in which a pod could start unmeshed.",
    type: "timeseries",
    unit: "s",
    queries: [[`histogram_quantile(0.99, sum by (le) (rate(meshcni_rechain_duration_seconds_bucket{${nodes}}[5m])))`, "p99"]],
    grid: { x: 8, y: 13, w: 8, h: 8 },
  },
  {
    title: "Config fights",
    description: "Back-offs because another agent keeps removing meshcni's entry.",
    type: "timeseries",
    queries: [[`sum by (node) (increase(meshcni_fights_total{${nodes}}[15m]))`, "{{node}}"]],
    grid: { x: 16, y: 13, w: 8, h: 8 },
  },
  {
    title: "Repairs",
    description: "Actions on unprotected meshed pods, by action and result.",
    type: "timeseries",
    queries: [[`sum by (action, result) (increase(meshcni_repairs_total{${nodes}}[15m]))`, "{{action}} {{result}}"]],
    grid: { x: 0, y: 21, w: 8, h: 8 },
  },
  {
    title: "Audit duration (p90)",
    description: "How long a sweep of a node's meshed pods takes.",
    type: "timeseries",
    unit: "s",
    queries: [[`histogram_quantile(0.9, sum by (le, node) (rate(meshcni_audit_duration_seconds_bucket{${nodes}}[10m])))`, "{{node}}"]],
    grid: { x: 8, y: 21, w: 8, h: 8 },
  },
  {
    title: "Cache age",
    description:
      "Seconds since each of the agent's caches last heard from the API server. Past 90 s the agent stops answering the plugin from it.",
    type: "timeseries",
    unit: "s",
    queries: [[`max by (node, cache) (meshcni_cache_age_seconds{${nodes}})`, "{{node}} {{cache}}"]],
    grid: { x: 16, y: 21, w: 8, h: 8 },
  },
  {
    title: "Watch restarts",
    description: "Watches of the API started again, by watch and why the last ended (expired is the normal end).",
    type: "timeseries",
    unit: "ops",
    queries: [[`sum by (watch, cause) (rate(meshcni_watch_restarts_total{${nodes}}[5m]))`, "{{watch}} {{cause}}"]],
    grid: { x: 0, y: 29, w: 8, h: 8 },
  },
  {
    title: "Plugin token: time left",
    description: "Until the plugin's token on the host expires; renewed at 80% of its life.",
    type: "timeseries",
    unit: "s",
    queries: [[`min by (node) (meshcni_plugin_token_remaining_seconds{${nodes}})`, "{{node}}"]],
    grid: { x: 8, y: 29, w: 8, h: 8 },
  },
  {
    title: "Agent memory",
    description: "The agent's resident memory (its sweeps run as child processes in the same container, within its limit).",
    type: "timeseries",
    unit: "bytes",
    queries: [[`max by (node) (process_resident_memory_bytes{${nodes}} and on (instance, node) meshcni_build_info)`, "{{node}}"]],
    grid: { x: 16, y: 29, w: 8, h: 8 },
  },
  {
    title: "ADDs and DELs the agent wrote",
    description:
      "What the plugin asked the agent to carry out: done (its writers wrote), handed_back (the plugin wrote itself: the netns not visible to the agent, its writers busy past the plugin's wait, or failing).",
    type: "timeseries",
    unit: "ops",
    queries: [[`sum by (verb, result) (rate(meshcni_agent_writes_total{${nodes}}[5m]))`, "{{verb}} {{result}}"]],
    grid: { x: 0, y: 37, w: 8, h: 8 },
  },
  {
    title: "What a pod start waits for the agent (p99)",
    description: `From a plugin's ADD or DEL question to the agent's answer, the write included; past ${agentTimeoutMs / 1000} s the plugin does it itself.`,
    type: "timeseries",
    unit: "s",
    queries: [
      [
        `histogram_quantile(0.99, sum by (node, verb, le) (rate(meshcni_plugin_answer_duration_seconds_bucket{${nodes}}[5m])))`,
        "{{node}} {{verb}}",
      ],
    ],
    grid: { x: 8, y: 37, w: 8, h: 8 },
  },
];

/** The Grafana dashboard (its JSON model): the figures the agent exports, per node or all. */
export function grafanaDashboard() {
  // Grafana's own variable syntax, filled in by Grafana from the datasource picker.
  const datasource = { type: "prometheus", uid: ["$", "{datasource}"].join("") };
  return {
    uid: "meshcni",
    title: "meshcni",
    tags: ["meshcni", "cni", "service-mesh"],
    schemaVersion: 39,
    time: { from: "now-6h", to: "now" },
    refresh: "1m",
    templating: {
      list: [
        { name: "datasource", type: "datasource", query: "prometheus", label: "Data source" },
        {
          name: "node",
          type: "query",
          datasource,
          query: "label_values(meshcni_build_info, node)",
          includeAll: true,
          multi: true,
          allValue: ".*",
          current: { text: "All", value: "$__all" },
          label: "Node",
        },
      ],
    },
    panels: panels.map((panel, index) => ({
      id: index + 1,
      title: panel.title,
      description: panel.description,
      type: panel.type,
      datasource,
      gridPos: panel.grid,
      fieldConfig: { defaults: panel.unit ? { unit: panel.unit } : {}, overrides: [] },
      targets: panel.queries.map(([expr, legendFormat], at) => ({
        refId: String.fromCharCode(65 + at),
        datasource,
        expr,
        legendFormat,
        ...(panel.type === "table" ? { format: "table", instant: true } : {}),
      })),
    })),
  };
}

/** The dashboard as a ConfigMap Grafana's sidecar loads (label grafana_dashboard: "1"). */
export function dashboardConfigMap(meta: { name: string; namespace: string; labels: Record<string, string> }) {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { ...meta, labels: { ...meta.labels, grafana_dashboard: "1" } },
    data: { "meshcni.json": `${JSON.stringify(grafanaDashboard(), null, 2)}\n` },
  };
}
