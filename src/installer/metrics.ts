import { Counter, Gauge, Registry } from "prom-client";

/** The agent's Prometheus metrics, on a registry of its own. */
export function createInstallerMetrics() {
  const registry = new Registry();
  return {
    registry,
    rechains: new Counter({
      name: "meshcni_rechain_total",
      help: "Times the agent wrote meshcni's entry into the active CNI config after it went missing.",
      registers: [registry],
    }),
    rechainLatency: new Gauge({
      name: "meshcni_rechain_last_latency_seconds",
      help: "Time from the config dir event to meshcni's entry written back, for the last re-chain.",
      registers: [registry],
    }),
    ready: new Gauge({
      name: "meshcni_ready",
      help: "1 while the binary, the kubeconfig and the entry in the active CNI config are all in place.",
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
    recordsRemoved: new Counter({
      name: "meshcni_records_removed_total",
      help: "ADD records removed because their pod left the node (podGone) or their netns is gone (netnsGone).",
      labelNames: ["reason"],
      registers: [registry],
    }),
    auditSeconds: new Gauge({
      name: "meshcni_audit_last_duration_seconds",
      help: "How long the last audit of this node's meshed pods took.",
      registers: [registry],
    }),
  };
}

export type InstallerMetrics = ReturnType<typeof createInstallerMetrics>;
