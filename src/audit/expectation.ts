import type { V1Namespace, V1Pod } from "@kubernetes/client-node";
import { activeConfig, brokenConfigReason, type ConfigFile } from "../cni/config-dir.js";
import { errorMessage } from "../errors.js";
import type { JsonObject } from "../json.js";
import type { NodeApi } from "../kube/node-api.js";
import { isOwnEntry, type NetConf, parseNetConf } from "../mesh/netconf.js";
import { firewallSpecFor, isControlPlane, needsNamespaceAnnotations, readApiServerPorts, redirectFamilies } from "../mesh/pod.js";
import { planRules, type RulePlan } from "../redirect/plan.js";
import type { Backend } from "../redirect/redirector.js";
import type { AttachmentRecord } from "../state/records.js";
import { newestRecordByUid } from "./classify.js";
import type { ScanTarget } from "./scan.js";

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
export function plansFor(conf: NetConf, pod: V1Pod, namespace: V1Namespace | undefined, apiServerPorts: number[]): RulePlan[] {
  const spec = firewallSpecFor(conf.linkerd, pod, namespace, apiServerPorts);
  return redirectFamilies(conf.linkerd, podIps(pod)).map((family) => planRules(spec, family));
}

/** What working out the expectations reads: namespaces and the `kubernetes` Service from the API, meshcni's entry, the backend. */
export interface ExpectationIo {
  api: Pick<NodeApi, "readNamespace" | "readService">;
  /** meshcni's netconf from the active config (for pods without a record); throws why there is none. */
  netconf(): NetConf;
  backend(conf: NetConf): Promise<Backend>;
}

/** What a pod is compared with: its record's plan, or the one ADD would compute now. */
export interface Expected {
  pod: V1Pod;
  record: AttachmentRecord | undefined;
  target: ScanTarget | undefined;
  /** Why no plan could be made. */
  problem?: string;
}

/** What each pod is compared with: its newest record's plan, else the one ADD would compute now. */
export async function expectations(pods: V1Pod[], records: AttachmentRecord[], io: ExpectationIo): Promise<Expected[]> {
  const byUid = newestRecordByUid(records);
  const namespaces = new Map<string, Promise<V1Namespace>>();
  let netconf: { conf: NetConf; backend: Backend } | undefined;
  let controlPlanePorts: Promise<number[]> | undefined;
  const expected: Expected[] = [];
  for (const pod of pods) {
    const uid = pod.metadata?.uid ?? "";
    const ips = podIps(pod);
    const record = byUid.get(uid);
    if (record) {
      expected.push({ pod, record, target: { uid, recordedNetns: record.netns, ips, plans: record.plans, backend: record.backend } });
      continue;
    }
    try {
      if (!netconf) {
        const conf = io.netconf();
        netconf = { conf, backend: await io.backend(conf) };
      }
      const name = pod.metadata?.namespace ?? "";
      if (needsNamespaceAnnotations(pod) && !namespaces.has(name)) namespaces.set(name, io.api.readNamespace(name));
      const namespace = needsNamespaceAnnotations(pod) ? await namespaces.get(name) : undefined;
      // As ADD finds them, read once per sweep.
      if (isControlPlane(pod)) controlPlanePorts ??= readApiServerPorts((namespace, name) => io.api.readService(namespace, name));
      const plans = plansFor(netconf.conf, pod, namespace, isControlPlane(pod) ? await controlPlanePorts! : []);
      expected.push({ pod, record, target: { uid, recordedNetns: undefined, ips, plans, backend: netconf.backend } });
    } catch (error) {
      expected.push({ pod, record, target: undefined, problem: `cannot compute meshcni's plan: ${errorMessage(error)}` });
    }
  }
  return expected;
}
