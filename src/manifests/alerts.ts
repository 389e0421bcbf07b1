import { imageRepository } from "../build-info.js";

/** Where each alert's runbook is: a heading per alert in docs/troubleshooting.md. */
const runbookBase = `https://${imageRepository.replace(/^ghcr\.io\//, "github.com/")}/blob/main/docs/troubleshooting.md`;

export interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels: { severity: "critical" | "warning" };
  annotations: { summary: string; description: string; runbook_url: string };
}

const alert = (name: string, severity: "critical" | "warning", expr: string, wait: string, summary: string, description: string) => ({
  alert: name,
  expr,
  ...(wait === "0m" ? {} : { for: wait }),
  labels: { severity },
  annotations: { summary, description, runbook_url: `${runbookBase}#${name.toLowerCase()}` },
});

/**
 * meshcni's alerts, on the agent's own series (each carries its `node`), and one on
 * kube-state-metrics' for a node whose agent never became ready (it has no series): what
 * pages is a meshed pod talking plaintext; the rest say why that may come (an agent not
 * ready or missing, a fight over the config, caches the agent no longer trusts, repairs or
 * token minting failing).
 */
export const alertRules: AlertRule[] = [
  alert(
    "MeshcniMeshedPodUnprotected",
    "critical",
    "max by (node, pod_namespace, pod_name, status) (meshcni_unprotected_pod) == 1",
    "5m",
    "Meshed pod {{ $labels.pod_namespace }}/{{ $labels.pod_name }} runs without its proxy redirect",
    "meshcni's agent on node {{ $labels.node }} found pod {{ $labels.pod_namespace }}/{{ $labels.pod_name }} {{ $labels.status }} (its netns does not hold the redirect to its proxy) for 5 minutes: its traffic bypasses the mesh, in plaintext. The pod's Events and the agent's log say what was tried.",
  ),
  alert(
    "MeshcniAgentNotReady",
    "critical",
    "max by (node) (meshcni_ready) == 0",
    "10m",
    "meshcni is not ready on node {{ $labels.node }}",
    "meshcni's agent on node {{ $labels.node }} has not been ready for 10 minutes (the binary, the plugin's kubeconfig or its entry in the active CNI config is missing): pods started there may fail to start, or start unmeshed if meshcni is not chained. The node's MeshcniReady condition and the agent's log say why.",
  ),
  alert(
    "MeshcniAgentMissing",
    "critical",
    'max by (namespace, daemonset) (kube_daemonset_status_desired_number_scheduled{daemonset=~"meshcni|linkerd-cni"} - kube_daemonset_status_number_ready{daemonset=~"meshcni|linkerd-cni"}) > 0',
    "15m",
    "Nodes have no ready agent of DaemonSet {{ $labels.namespace }}/{{ $labels.daemonset }}",
    "For 15 minutes the DaemonSet {{ $labels.namespace }}/{{ $labels.daemonset }} has had fewer ready pods than nodes it should run on (kube-state-metrics' word, so this fires where the agent never started and has no series of its own for the other alerts): on those nodes nothing keeps meshcni chained or repairs pods. kubectl -n {{ $labels.namespace }} get pods -o wide names the nodes and why.",
  ),
  alert(
    "MeshcniChainBroken",
    "critical",
    "max by (node, type) (meshcni_chain_missing_plugin) == 1",
    "5m",
    "The CNI chain on node {{ $labels.node }} runs plugin {{ $labels.type }}, which is not installed",
    "The active CNI config on node {{ $labels.node }} chains plugin {{ $labels.type }}, and no CNI bin dir holds its executable: the container runtime fails every pod's network setup and teardown there (pods stuck in ContainerCreating and Terminating, their IPs leaked). The node's MeshcniReady condition (ChainBroken) names the config; install the plugin or fix the primary CNI's config.",
  ),
  alert(
    "MeshcniConfigFight",
    "warning",
    "sum by (node) (increase(meshcni_fights_total[15m])) > 0",
    "0m",
    "Another agent keeps removing meshcni from the CNI config on node {{ $labels.node }}",
    "On node {{ $labels.node }} something rewrote the active CNI config without meshcni's entry 20 times in 10 s, and the agent backed off: pods started in the gaps run unmeshed until a sweep repairs them. A CNI that owns the config dir exclusively (e.g. Cilium with cni.exclusive=true) is the usual cause.",
  ),
  alert(
    "MeshcniCacheStale",
    "warning",
    "max by (node, cache) (meshcni_cache_age_seconds) > 300",
    "5m",
    "meshcni's {{ $labels.cache }} cache on node {{ $labels.node }} has heard nothing from the API server for over 5 minutes",
    "The agent on node {{ $labels.node }} has had no event or bookmark for its {{ $labels.cache }} watch for over 5 minutes: it answers the plugin through the API instead (slower pod starts), and its sweeps list the node themselves. The agent's log names the watch's failures; check the API server and what stands between.",
  ),
  alert(
    "MeshcniRepairsFailing",
    "warning",
    'sum by (node, action) (increase(meshcni_repairs_total{result="failed"}[15m])) > 0',
    "0m",
    "meshcni cannot repair unprotected pods on node {{ $labels.node }}",
    "The agent on node {{ $labels.node }} failed to {{ $labels.action }} an unprotected meshed pod in the last 15 minutes. The pod's Events say why; MeshcniMeshedPodUnprotected names the pod while it stays unprotected.",
  ),
  alert(
    "MeshcniEvictionsBlocked",
    "warning",
    'sum by (node) (increase(meshcni_repairs_total{action="evict",result="blocked"}[30m])) > 0 and on (node) max by (node) (meshcni_meshed_pods{status=~"missing|drifted"}) > 0',
    "30m",
    "PodDisruptionBudgets keep meshcni from evicting unprotected pods on node {{ $labels.node }}",
    "For 30 minutes the agent on node {{ $labels.node }} has been refused evictions of unprotected meshed pods by their PodDisruptionBudgets. Delete the pods by hand, or relax the budget.",
  ),
  alert(
    "MeshcniBackendSwitchPending",
    "warning",
    'max by (node, backend) (meshcni_redirect_backend_records{selected="false"}) > 0',
    "15m",
    "Pods on node {{ $labels.node }} keep their redirect in the {{ $labels.backend }} backend, not the node's",
    "For 15 minutes the agent on node {{ $labels.node }} has found pods whose redirect is in the {{ $labels.backend }} backend while its netconf selects another (an iptables-mode change not carried out): its sweeps move protected pods, so a count that stays means moves failing (meshcni_redirect_moves_total) or an agent running an older netconf. The agent's log says which backend it runs with and why a move failed.",
  ),
  alert(
    "MeshcniMeshedPodsUnjudged",
    "warning",
    'max by (node) (meshcni_meshed_pods{status="unknown"}) > 0',
    "15m",
    "meshcni cannot tell whether meshed pods on node {{ $labels.node }} are redirected",
    "For 15 minutes the agent on node {{ $labels.node }} has had meshed pods whose redirect it cannot judge (status unknown): no netns found, the container runtime not confirming one, a netns two pods claim, or no plan to compare with. Such a pod may run without its proxy's redirect. meshcni audit on the node names each pod and why.",
  ),
  alert(
    "MeshcniPluginTokenFailing",
    "warning",
    'sum by (node) (increase(meshcni_plugin_token_requests_total{result="failed"}[15m])) > 0 and on (node) max by (node) (meshcni_plugin_token_remaining_seconds) < 600',
    "5m",
    "meshcni cannot mint the plugin's token on node {{ $labels.node }}",
    "The agent on node {{ $labels.node }} cannot mint the plugin's ServiceAccount token (TokenRequest), and the one on the host expires within 10 minutes: once it has, pods there start only while the agent answers the plugin. The agent's log says why (the ServiceAccount or its Role missing, the API server refusing).",
  ),
];

/** The PrometheusRule (Prometheus Operator) holding the alerts. */
export function prometheusRule(meta: { name: string; namespace: string; labels: Record<string, string> }) {
  return {
    apiVersion: "monitoring.coreos.com/v1",
    kind: "PrometheusRule",
    metadata: meta,
    spec: { groups: [{ name: "meshcni", rules: alertRules }] },
  };
}
