import type { V1Namespace, V1Pod } from "@kubernetes/client-node";
import { activeConfig, brokenConfigReason, type ConfigFile, type JsonObject } from "../cni/config-dir.js";
import { isOwnEntry, type NetConf, parseNetConf } from "../mesh/netconf.js";
import { firewallSpecFor, redirectFamilies } from "../mesh/pod.js";
import { planRules, type RulePlan } from "../redirect/plan.js";

/**
 * meshcni's entry in the active config, as the runtime hands it to the plugin (the
 * conflist's cniVersion and name injected): what ADD would run with now. Throws, saying
 * why, when there is none.
 */
export function activeNetconf(files: ConfigFile[]): NetConf {
  const active = activeConfig(files);
  if (!active) throw new Error("there is no CNI config");
  if (!active.config.valid) throw new Error(brokenConfigReason(active.file.name, active.config.reason));
  const { json } = active.config;
  const entry = active.config.kind === "conflist" ? (json.plugins as unknown[]).find(isOwnEntry) : undefined;
  if (!entry) throw new Error(`the active CNI config ${active.file.name} holds no meshcni entry`);
  return parseNetConf(JSON.stringify({ cniVersion: json.cniVersion, name: json.name, ...(entry as JsonObject) }));
}

/** The pod's addresses, as the API reports them. */
export function podIps(pod: V1Pod): string[] {
  const listed = (pod.status?.podIPs ?? []).map((entry) => entry.ip);
  return listed.length > 0 ? listed : pod.status?.podIP ? [pod.status.podIP] : [];
}

/** The plans ADD would compute for the pod under that netconf (an invalid annotation throws, as in ADD). */
export function plansFor(conf: NetConf, pod: V1Pod, namespace: V1Namespace | undefined, apiServerPort: number): RulePlan[] {
  const spec = firewallSpecFor(conf.linkerd, pod, namespace, apiServerPort);
  return redirectFamilies(conf.linkerd, podIps(pod)).map((family) => planRules(spec, family));
}
