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
    unprotectedPods: new Counter({
      name: "meshcni_unprotected_pods_total",
      help: "Meshed pods of this node found running without meshcni's redirect (missing) or with it changed (drifted).",
      labelNames: ["status"],
      registers: [registry],
    }),
    repairs: new Counter({
      name: "meshcni_repairs_total",
      help: "Unprotected pods repaired, by action (delete, label).",
      labelNames: ["action"],
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
