import type { V1Namespace, V1Pod } from "@kubernetes/client-node";
import { errorMessage } from "../errors.js";
import { ApiStatusError } from "../kube/errors.js";
import type { NodeApi } from "../kube/node-api.js";
import type { NetConf } from "../mesh/netconf.js";
import { needsNamespaceAnnotations } from "../mesh/pod.js";
import { podKeyOf, podName } from "../pod-key.js";
import type { RulePlan } from "../redirect/plan.js";
import type { Backend } from "../redirect/redirector.js";
import type { AttachmentRecord, RecordStore } from "../state/records.js";
import {
  classify,
  isUnprotected,
  newestRecordByUid,
  type Observation,
  type PodStatus,
  podStatuses,
  podsToAudit,
  sortAudits,
} from "./classify.js";
import type { PodReport, SweepReport, SweepRequest } from "./contract.js";
import { plansFor, podIps } from "./expectation.js";
import {
  eventActions,
  eventMessage,
  eventReasons,
  type RepairAction,
  type RepairLimits,
  type RepairResult,
  repairAction,
  unprotectedLabel,
} from "./repair.js";
import type { ScanTarget } from "./scan.js";

/** A record younger than this is never taken as stale: its pod may not be listed yet. */
export const recordGraceMs = 30_000;

/** A sweep's I/O, passed in: the API, the records, the netns. */
export interface SweepIo {
  api: Pick<NodeApi, "listPods" | "readNamespace" | "createPodEvent" | "labelPod" | "evictPod">;
  records: RecordStore;
  /** meshcni's netconf from the active config (for pods without a record); throws why there is none. */
  netconf(): NetConf;
  backend(conf: NetConf): Promise<Backend>;
  apiServerPort(conf: NetConf): Promise<number>;
  scan(targets: ScanTarget[]): Promise<Map<string, Observation>>;
  /** Writes the plans into a netns (a host path), atomically per family. */
  redirect(netns: string, backend: Backend, plans: RulePlan[]): Promise<void>;
  netnsExists(netns: string): boolean;
  now(): number;
}

/** What a pod is compared with: its record's plan, or the one ADD would compute now. */
export interface Expected {
  pod: V1Pod;
  record: AttachmentRecord | undefined;
  target: ScanTarget | undefined;
  /** Why no plan could be made. */
  problem?: string;
}

/** Records whose pod is gone from the node, or whose netns is: host state must not outlive what it describes. */
export function staleRecords(
  records: AttachmentRecord[],
  podUids: ReadonlySet<string>,
  netnsExists: (netns: string) => boolean,
  now: number,
): Array<{ record: AttachmentRecord; reason: "podGone" | "netnsGone" }> {
  return records.flatMap((record) => {
    if (now - Date.parse(record.time) < recordGraceMs) return [];
    const reason = !podUids.has(record.pod.uid) ? "podGone" : netnsExists(record.netns) ? undefined : "netnsGone";
    return reason ? [{ record, reason }] : [];
  });
}

/** What each pod is compared with: its newest record's plan, else the one ADD would compute now. */
export async function expectations(
  pods: V1Pod[],
  records: AttachmentRecord[],
  io: Pick<SweepIo, "api" | "netconf" | "backend" | "apiServerPort">,
): Promise<Expected[]> {
  const byUid = newestRecordByUid(records);
  const namespaces = new Map<string, Promise<V1Namespace>>();
  let netconf: { conf: NetConf; backend: Backend; port: number } | undefined;
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
        netconf = { conf, backend: await io.backend(conf), port: await io.apiServerPort(conf) };
      }
      const name = pod.metadata?.namespace ?? "";
      if (needsNamespaceAnnotations(pod) && !namespaces.has(name)) namespaces.set(name, io.api.readNamespace(name));
      const namespace = needsNamespaceAnnotations(pod) ? await namespaces.get(name) : undefined;
      const plans = plansFor(netconf.conf, pod, namespace, netconf.port);
      expected.push({ pod, record, target: { uid, recordedNetns: undefined, ips, plans, backend: netconf.backend } });
    } catch (error) {
      expected.push({ pod, record, target: undefined, problem: `cannot compute meshcni's plan: ${errorMessage(error)}` });
    }
  }
  return expected;
}

/** Records a pod's redirect as found (adopted) or written (repaired) in `netns`. */
function record(
  io: SweepIo,
  entry: Expected,
  target: ScanTarget,
  netns: string,
  attachment: { containerId: string; ifname: string },
): void {
  io.records.write({
    state: "added",
    pod: { uid: "", ...podKeyOf(entry.pod) },
    ...attachment,
    netns,
    backend: target.backend,
    plans: target.plans,
  });
}

/** Carries out one repair; what the Event reports. */
async function act(action: RepairAction, entry: Expected, target: ScanTarget, netns: string, io: SweepIo): Promise<RepairResult> {
  try {
    if (action === "redirect") {
      await io.redirect(netns, target.backend, target.plans);
      record(io, entry, target, netns, entry.record ?? { containerId: `repaired-${target.uid}`, ifname: "eth0" });
    }
    if (action === "evict") {
      const outcome = await io.api.evictPod(entry.pod);
      if (outcome !== "evicted") return outcome;
    }
    if (action === "label") await io.api.labelPod(entry.pod, unprotectedLabel, "true");
    return "done";
  } catch (error) {
    // Eviction refuses a pod that several PodDisruptionBudgets match, until they change: not a passing failure.
    const permanent = action === "evict" && error instanceof ApiStatusError && error.code === 500;
    return { failed: errorMessage(error), ...(permanent ? { permanent: true as const } : {}) };
  }
}

/**
 * One pass over the node's meshed pods: classify each by what its netns holds; with a
 * policy, also record adopted pods, repair unprotected ones (an Event on each, saying
 * what was found and done), and remove records whose pod or netns is gone and the files
 * killed plugin processes left.
 */
export async function sweep(request: SweepRequest, io: SweepIo): Promise<SweepReport> {
  // Read before the pods are listed: a record written meanwhile belongs to a listed pod.
  const records = io.records.list();
  const allPods = await io.api.listPods();
  const pods = podsToAudit(allPods).filter((pod) => request.pods.length === 0 || request.pods.includes(podName(pod)));
  const expected = await expectations(pods, records, io);
  const observations = await io.scan(expected.flatMap((entry) => (entry.target ? [entry.target] : [])));
  const reports: PodReport[] = [];
  const limits: RepairLimits = {
    self: request.self,
    excludeNamespaces: new Set(request.limits.excludeNamespaces),
    skipUids: new Set(request.limits.skipUids),
    evictionsLeft: request.limits.evictionsLeft,
  };
  for (const entry of expected) {
    const observation: Observation = observations.get(entry.pod.metadata?.uid ?? "") ?? {
      found: false,
      reason: entry.problem ?? "not looked into",
    };
    const audit: PodReport = entry.problem
      ? { uid: "", ...podKeyOf(entry.pod), status: "unknown", details: [entry.problem] }
      : classify(entry.pod, entry.record, observation);
    reports.push(audit);
    if (!request.policy || !entry.target || !observation.found) continue;
    if (audit.status === "adopted")
      record(io, entry, entry.target, observation.netns, { containerId: `adopted-${audit.uid}`, ifname: "eth0" });
    if (!isUnprotected(audit)) continue;
    const decision = repairAction(entry.pod, request.policy, limits);
    if (typeof decision === "object") {
      audit.skipped = decision.skip;
      continue;
    }
    audit.action = decision;
    audit.result = await act(decision, entry, entry.target, observation.netns, io);
    if (decision === "evict" && audit.result === "done") limits.evictionsLeft--;
    // A blocked eviction is tried again at the next sweep, a throttled one after the server's wait: no Event each time.
    if (audit.result === "blocked" || (typeof audit.result === "object" && "throttledMs" in audit.result)) continue;
    const message = eventMessage(audit, decision, request.policy, audit.result, request.limits.retryMinutes);
    await io.api
      .createPodEvent(entry.pod, {
        reason: eventReasons[audit.status as "missing" | "drifted"],
        action: eventActions[decision],
        type: "Warning",
        message,
      })
      .catch((error: unknown) => {
        audit.eventFailed = errorMessage(error);
      });
  }
  const removed = { podGone: 0, netnsGone: 0 };
  if (request.policy) {
    io.records.sweep();
    const podUids = new Set(allPods.map((pod) => pod.metadata?.uid ?? ""));
    for (const { record, reason } of staleRecords(records, podUids, (netns) => io.netnsExists(netns), io.now())) {
      io.records.remove({ containerID: record.containerId, ifname: record.ifname });
      removed[reason]++;
    }
  }
  const summary = Object.fromEntries(podStatuses.map((status) => [status, 0])) as Record<PodStatus, number>;
  for (const report of reports) summary[report.status]++;
  return { node: request.node, pods: sortAudits(reports), summary, recordsRemoved: removed };
}

/** Whether the node ends the sweep protected: every pod protected, adopted, or redirected now. */
export function allProtected(report: SweepReport): boolean {
  return report.pods.every(
    (pod) => pod.status === "protected" || pod.status === "adopted" || (pod.action === "redirect" && pod.result === "done"),
  );
}
