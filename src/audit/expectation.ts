import type { V1Namespace, V1Pod } from "@kubernetes/client-node";
import { activeConfig, brokenConfigReason, type ConfigFile, type ParsedConfig } from "../cni/config-dir.js";
import { type DropInFile, dropInNetwork } from "../cni/drop-ins.js";
import { latestVersion } from "../cni/version.js";
import { errorMessage } from "../errors.js";
import { isJsonObject, type JsonObject } from "../json.js";
import type { NodeApi } from "../kube/node-api.js";
import { isEntryOfType, isRedirectEntry, type NetConf, parseNetConf } from "../mesh/netconf.js";
import { firewallSpecFor, isControlPlane, needsNamespaceAnnotations, readApiServerPorts, redirectFamilies } from "../mesh/pod.js";
import { planLines, planRules, type RulePlan } from "../redirect/plan.js";
import type { Backend } from "../redirect/redirector.js";
import type { Family } from "../redirect/spec.js";
import type { AttachmentRecord } from "../state/records.js";
import { newestRecordByUid } from "./classify.js";
import type { ScanTarget } from "./scan.js";

/**
 * meshcni's entry in the active config, or in its drop-in there (`dropIns`: meshcni's drop-ins
 * on the disk), as the runtime hands it to the plugin (the conflist's cniVersion and name
 * injected): what ADD would run with now. Throws, saying why, when there is none.
 */
export function activeNetconf(files: ConfigFile[], dropIns: DropInFile[] = []): NetConf {
  const active = activeConfig(files);
  if (!active) throw new Error("there is no CNI config");
  if (!active.config.valid) throw new Error(brokenConfigReason(active.file.name, active.config.reason));
  const { json } = active.config;
  // meshcni's own first: linkerd-cni's may sit beside it during a switch.
  const plugins = active.config.kind === "conflist" ? (json.plugins as unknown[]) : [];
  const entry = plugins.find(isEntryOfType("meshcni")) ?? plugins.find(isRedirectEntry) ?? dropInEntry(active.file, active.config, dropIns);
  if (!entry) throw new Error(`the active CNI config ${active.file.name} holds no meshcni entry, nor does its drop-in dir`);
  return entryNetconf(entry as JsonObject, json);
}

/** meshcni's drop-in for the active config's network, when it holds an entry (not the agent's probe). */
function dropInEntry(file: ConfigFile, config: ParsedConfig, dropIns: DropInFile[]): JsonObject | undefined {
  const target = dropInNetwork(file, config);
  const text = "network" in target ? dropIns.find(({ network }) => network === target.network)?.text : undefined;
  try {
    const entry: unknown = text === undefined ? undefined : JSON.parse(text);
    return isJsonObject(entry) && isRedirectEntry(entry) && entry.probe !== true ? entry : undefined;
  } catch {
    return undefined;
  }
}

/**
 * An entry as a netconf, the conflist's cniVersion and name injected as the runtime does.
 * The agent's own entry (no conflist: the plans need only a version it is read in) is what
 * it chains, and so what every pod is held to even while another installer keeps the active
 * config without it (Cilium's cni-exclusive, say).
 */
export function entryNetconf(entry: JsonObject, conflist: JsonObject = { cniVersion: latestVersion, name: "meshcni" }): NetConf {
  return parseNetConf(JSON.stringify({ cniVersion: conflist.cniVersion, name: conflist.name, ...entry }));
}

/** The pod's addresses, as the API reports them. */
export function podIps(pod: V1Pod): string[] {
  const listed = (pod.status?.podIPs ?? []).map((entry) => entry.ip);
  return listed.length > 0 ? listed : pod.status?.podIP ? [pod.status.podIP] : [];
}

/**
 * The plans ADD would compute for the pod under that netconf (an invalid annotation throws,
 * as in ADD), for the families its addresses and the netconf name, and those its record has
 * (ADD saw the addresses the primary CNI gave, which the API may not list all of): a record
 * can add a family to what is expected, never take one away.
 */
export function plansFor(
  conf: NetConf,
  pod: V1Pod,
  namespace: V1Namespace | undefined,
  apiServerPorts: number[],
  recorded: Family[] = [],
): RulePlan[] {
  const spec = firewallSpecFor(conf.linkerd, pod, namespace, apiServerPorts);
  const families = new Set([...redirectFamilies(conf.linkerd, podIps(pod)), ...recorded]);
  return (["ipv4", "ipv6"] as const).filter((family) => families.has(family)).map((family) => planRules(spec, family));
}

/** What working out the expectations reads: namespaces and the `kubernetes` Service from the API, meshcni's entry, the backend. */
export interface ExpectationIo {
  api: Pick<NodeApi, "readNamespace" | "readService">;
  /** meshcni's netconf from the active config (for pods without a record); throws why there is none. */
  netconf(): NetConf;
  backend(conf: NetConf): Promise<Backend>;
}

/** What a pod is compared with: the plan ADD would compute now; where its netns is, from its record if it has one. */
export interface Expected {
  pod: V1Pod;
  record: AttachmentRecord | undefined;
  target: ScanTarget | undefined;
  /** How the record's plan differs from that one (a record changed by hand, or a netconf changed since ADD). */
  recordDrift: string[];
  /** The backend meshcni's entry selects on this node now: where a redirect in another is moved to. */
  nodeBackend?: Backend;
  /** Why no plan could be made. */
  problem?: string;
}

/** How a record's plans differ from the pod's: per family, the lines one has and the other lacks. */
export function recordDrift(recorded: RulePlan[], expected: RulePlan[]): string[] {
  const lines = (plans: RulePlan[], family: string) => plans.filter((plan) => plan.family === family).flatMap(planLines);
  const families = [...new Set([...expected, ...recorded].map((plan) => plan.family))].sort();
  return families.flatMap((family) => {
    const want = lines(expected, family);
    const have = lines(recorded, family);
    // Sets: linear in the lines, however many a pod's annotations make.
    const wanted = new Set(want);
    const had = new Set(have);
    const extra = have.filter((line) => !wanted.has(line)).map((line) => `its ADD record's ${family} plan has ${line}`);
    const lacking = want.filter((line) => !had.has(line)).map((line) => `its ADD record's ${family} plan lacks ${line}`);
    return [...extra, ...lacking];
  });
}

/**
 * What each pod is compared with: the plan ADD would compute now, from meshcni's entry in the
 * active config and the pod's annotations, never from its record (a record's plan is what
 * someone wrote on the node's disk: one weaker than the pod's is itself a finding). The record
 * says where the pod's netns is and which backend wrote it.
 */
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
      const apiServerPorts = isControlPlane(pod) ? await controlPlanePorts! : [];
      const recordedFamilies = record?.plans.map((plan) => plan.family);
      const plans = plansFor(netconf.conf, pod, namespace, apiServerPorts, recordedFamilies);
      const drift = record ? recordDrift(record.plans, plans) : [];
      const recordPlans = drift.length > 0 ? record?.plans : undefined;
      const backend = record?.backend ?? netconf.backend;
      expected.push({
        pod,
        record,
        target: { uid, recordedNetns: record?.netns, ips, plans, recordPlans, backend },
        recordDrift: drift,
        nodeBackend: netconf.backend,
      });
    } catch (error) {
      expected.push({ pod, record, target: undefined, recordDrift: [], problem: `cannot compute meshcni's plan: ${errorMessage(error)}` });
    }
  }
  return expected;
}
