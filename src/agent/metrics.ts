import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import { buildInfo } from "../build-info.js";
import { agentTimeoutMs } from "../kube/agent-connection.js";

/** Re-chains take milliseconds; a back-off or a slow disk, seconds. */
const rechainBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
/** The agent's answer to a pod start: ~0.3 ms from the cache, a few ms with a write, up to the plugin's wait under load. */
const answerBuckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2];
/** An audit of a node: ~0.1 s for a few pods, ~0.6 s for 200 (npm run bench). */
const auditBuckets = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * The agent's Prometheus metrics, on a registry of its own, with the process's (process_*,
 * nodejs_*). Each series carries its node (`node`), so an alert names the node whatever
 * labels the scrape adds.
 */
export function createAgentMetrics(node?: string) {
  const registry = new Registry();
  if (node) registry.setDefaultLabels({ node });
  /** Each cache's age in seconds, read at every scrape (the node tasks register theirs). */
  const cacheAges = new Map<string, () => number>();
  /** Seconds the plugin's token has left, read at every scrape (the credentials register it). */
  const tokenLeft: { seconds?: () => number | undefined } = {};
  // The event loop's delay sampled every 10 s, not prom-client's every 10 ms: its sampler is a timer of its own, and 100 wakes a
  // second were half the idle agent's CPU; one a second was still a third of its wakes. A stall shows in the plugin's answer time.
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 10_000 });
  // prom-client's gauges with a counter's suffix (promtool rejects them); nodejs_active_handles and _requests say the same.
  for (const misnamed of ["nodejs_active_handles_total", "nodejs_active_requests_total", "nodejs_active_resources_total"])
    registry.removeSingleMetric(misnamed);
  new Gauge({
    name: "meshcni_build_info",
    help: "Always 1: the running agent's version, commit and runtime as labels.",
    labelNames: ["version", "commit", "runtime"],
    registers: [registry],
  }).set({ version: buildInfo.version, commit: buildInfo.commit, runtime: buildInfo.runtime }, 1);
  return {
    registry,
    rechains: new Counter({
      name: "meshcni_rechains_total",
      help: "Times the agent wrote meshcni's entry back into the active CNI config, by cause: entry_removed (the config was rewritten, replaced or recreated without it), active_config_changed (another config now sorts first).",
      labelNames: ["cause"],
      registers: [registry],
    }),
    rechainDuration: new Histogram({
      name: "meshcni_rechain_duration_seconds",
      help: "Time from the config dir change to meshcni's entry written back: the window in which a new pod could start unmeshed.",
      buckets: rechainBuckets,
      registers: [registry],
    }),
    fights: new Counter({
      name: "meshcni_fights_total",
      help: "Back-offs started because another agent keeps removing meshcni's entry (20 re-chains of one file in 10 s).",
      registers: [registry],
    }),
    socketTakenBack: new Counter({
      name: "meshcni_plugin_socket_taken_back_total",
      help: "Times the agent took its socket's path back from a file put in its place (another listener, through a hostPath to its state dir): the plugin asked the API itself meanwhile.",
      registers: [registry],
    }),
    socketDropped: new Counter({
      name: "meshcni_plugin_socket_dropped_total",
      help: "Connections to the plugin's socket closed as they came, the agent holding as many as it may at once (256): their plugins asked the API themselves.",
      registers: [registry],
    }),
    chainMode: new Gauge({
      name: "meshcni_chain_mode",
      help: "How meshcni is chained (1 for the mode in force): dropin (its own file, loaded by the runtime), conflist (its entry in the active config), probe or asking (being decided).",
      labelNames: ["mode"] as const,
      registers: [registry],
    }),
    ready: new Gauge({
      name: "meshcni_ready",
      help: "1 while the binary, the kubeconfig and the entry in the active CNI config are all in place, and the runtime can run the active config's whole chain.",
      registers: [registry],
    }),
    chainMissing: new Gauge({
      name: "meshcni_chain_missing_plugin",
      help: "1 for each plugin type the active CNI config chains with no executable in the CNI bin dir: the runtime fails every pod's ADD and DEL on the node (the agent is not ready: ChainBroken).",
      labelNames: ["type"],
      registers: [registry],
    }),
    answers: new Histogram({
      name: "meshcni_plugin_answer_duration_seconds",
      help: `From a plugin's ADD or DEL question to the agent's answer (its decision, and the write when its writers do it): what a pod start waits for the agent. The plugin waits ${agentTimeoutMs / 1000} s, then does it itself.`,
      labelNames: ["verb"],
      buckets: answerBuckets,
      registers: [registry],
    }),
    writes: new Counter({
      name: "meshcni_agent_writes_total",
      help: "ADDs and DELs the plugin asked the agent to carry out, by verb and result: done (the agent's writer wrote), handed_back (the plugin wrote itself: the netns not visible to the agent, the writer busy past the plugin's wait or failing).",
      labelNames: ["verb", "result"],
      registers: [registry],
    }),
    meshedPods: new Gauge({
      name: "meshcni_meshed_pods",
      help: "This node's meshed pods by what their netns hold, as the last audits found them (protected, adopted, missing, drifted, unknown).",
      labelNames: ["status"],
      registers: [registry],
    }),
    repairs: new Counter({
      name: "meshcni_repairs_total",
      help: "Actions on unprotected meshed pods, by action (redirect, evict, label, none) and result (done, blocked, failed).",
      labelNames: ["action", "result"],
      registers: [registry],
    }),
    moves: new Counter({
      name: "meshcni_redirect_moves_total",
      help: "Running pods' redirects moved to the node's backend after its iptables-mode changed (from, to: legacy, nft, plain, nftables), by result (done, failed: the old backend's rules stay).",
      labelNames: ["from", "to", "result"],
      registers: [registry],
    }),
    netconfVerified: new Gauge({
      name: "meshcni_netconf_verified",
      help: "1 once the netconf the agent runs with is its ConfigMap's as the API holds it (read at its start; where kubelet's copy lagged, the agent took the API's), 0 until it could read it.",
      registers: [registry],
    }),
    backends: new Gauge({
      name: "meshcni_redirect_backend_records",
      help: "The node's ADD records by the backend holding their redirect (legacy, nft, plain, nftables), and whether that is the backend the agent's netconf selects on the node (selected: true, false), as the last full sweep found them: a count under selected=\"false\" that stays is a switch not carried out.",
      labelNames: ["backend", "selected"],
      registers: [registry],
    }),
    recordsRemoved: new Counter({
      name: "meshcni_records_removed_total",
      help: "ADD records removed because their pod left the node (podGone), their netns is gone (netnsGone) or the container runtime no longer has their sandbox (sandboxGone).",
      labelNames: ["reason"],
      registers: [registry],
    }),
    watchRestarts: new Counter({
      name: "meshcni_watch_restarts_total",
      help: "Watches of the API the agent started again, by watch (pods, node, service, serviceaccount) and why the last one ended: expired (ran its time, as watches end), closed (ended early by the server), error (an ERROR event), gone (410: relisted), silent (nothing, not even a bookmark, past its deadline), throttled (429), failed (any other failure).",
      labelNames: ["watch", "cause"],
      registers: [registry],
    }),
    cacheAges,
    namespaceReads: new Counter({
      name: "meshcni_namespace_reads_total",
      help: "Namespaces read from the API (no watch holds them), by cause (prefetch: a meshed pod bound to the node; add: none read within 10 s at its ADD; sweep: none within 10 minutes) and result (read, failed).",
      labelNames: ["cause", "result"],
      registers: [registry],
    }),
    cacheAge: new Gauge({
      name: "meshcni_cache_age_seconds",
      help: "Seconds since each of the agent's caches (pods, node, service, serviceaccount) last heard from the API server: a list, an event or a bookmark (about one a minute). Past 90 s the agent stops answering from it.",
      labelNames: ["cache"],
      registers: [registry],
      collect() {
        for (const [cache, age] of cacheAges) this.set({ cache }, age());
      },
    }),
    unprotectedPods: new Gauge({
      name: "meshcni_unprotected_pod",
      help: "1 for each meshed pod of this node its last sweep left without its redirect (status: missing or drifted), by the pod's namespace and name; none when every meshed pod is protected.",
      labelNames: ["pod_namespace", "pod_name", "status"],
      registers: [registry],
    }),
    pluginTokenRequests: new Counter({
      name: "meshcni_plugin_token_requests_total",
      help: "TokenRequests for the plugin's ServiceAccount, by result (minted, failed). The plugin uses that token when the agent cannot answer it.",
      labelNames: ["result"],
      registers: [registry],
    }),
    tokenLeft,
    pluginTokenRemaining: new Gauge({
      name: "meshcni_plugin_token_remaining_seconds",
      help: "Seconds until the plugin's token on the host expires (renewed at 80% of its life); 0 when there is none.",
      registers: [registry],
      collect() {
        this.set(Math.max(0, tokenLeft.seconds?.() ?? 0));
      },
    }),
    auditDuration: new Histogram({
      name: "meshcni_audit_duration_seconds",
      help: "How long an audit of this node's meshed pods took (all of them, or those a watch event named).",
      buckets: auditBuckets,
      registers: [registry],
    }),
    auditsUnchanged: new Counter({
      name: "meshcni_audit_unchanged_total",
      help: "Full sweeps answered without their process: since the last clean one, nothing they read moved (every pod's netns at the same nf_tables generation, the records, the pods and namespaces, the entry). Counted in meshcni_audit_duration_seconds too.",
      registers: [registry],
    }),
  };
}

export type AgentMetrics = ReturnType<typeof createAgentMetrics>;
