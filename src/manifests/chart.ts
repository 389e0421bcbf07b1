import { prometheusRule } from "./alerts.js";
import { chartValuesSchema } from "./chart-schema.js";
import { dashboardConfigMap } from "./dashboard.js";
import { nodeScopePolicyFor, pluginTokenSeconds } from "./policy.js";

/**
 * Placeholders in the chart's generated files, which its templates replace with the values
 * (templates/node-scope-policy.yaml): the policy is rendered here, once, by the code that
 * renders it for `meshcni manifests`, never written twice.
 */
export const chartPlaceholders = {
  taintKey: "MESHCNI_TAINT_KEY",
  taintEffect: "MESHCNI_TAINT_EFFECT",
  evictNamespaces: "MESHCNI_EVICT_NAMESPACES",
  agentAccount: "MESHCNI_AGENT_ACCOUNT",
};

/** The chart's generated files: its values' schema, and files/ (what Helm reads with .Files.Get), from the code that renders deploy/. Pure. */
export function chartFiles(): Array<{ name: string; text: string }> {
  const meta = { name: "meshcni", namespace: "", labels: {} };
  const policySpec = (evictNamespaces: string[] | undefined) => {
    const taint = { key: chartPlaceholders.taintKey, effect: chartPlaceholders.taintEffect };
    const [policy] = nodeScopePolicyFor({ taint, evictNamespaces, pluginTokenSeconds }, chartPlaceholders.agentAccount, {});
    return `${JSON.stringify((policy as { spec: unknown }).spec)}\n`;
  };
  return [
    { name: "values.schema.json", text: `${JSON.stringify(chartValuesSchema(), null, 2)}\n` },
    { name: "files/node-scope-policy.json", text: policySpec(undefined) },
    { name: "files/node-scope-policy-evict-namespaces.json", text: policySpec([chartPlaceholders.evictNamespaces]) },
    { name: "files/prometheus-rule-spec.json", text: `${JSON.stringify(prometheusRule(meta).spec)}\n` },
    { name: "files/meshcni.json", text: dashboardConfigMap(meta).data["meshcni.json"] },
  ];
}
