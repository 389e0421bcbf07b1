import type { V1Namespace, V1Pod } from "@kubernetes/client-node";
import type { SandboxLookup } from "../cri/runtime.js";
import { errorMessage } from "../errors.js";
import { ApiStatusError } from "../kube/errors.js";
import type { NodeApi } from "../kube/node-api.js";
import { podKeyOf, podName } from "../pod-key.js";
import type { RulePlan } from "../redirect/plan.js";
import type { Backend } from "../redirect/redirector.js";
import type { RecordStore } from "../state/records.js";
import { classify, isUnprotected, type Observation, type PodStatus, podStatuses, podsToAudit, sortAudits } from "./classify.js";
import { confirmNetns, netnsUnconfirmed } from "./confirm.js";
import type { PodReport, SweepReport, SweepRequest } from "./contract.js";
import { type ExpectationIo, type Expected, expectations } from "./expectation.js";
import { backendsAfter, moveAttachment, moveTarget, moveText } from "./move.js";
import {
  aroundUnremoved,
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
import { pastGrace, staleRecords } from "./stale.js";

/** A sweep's I/O, passed in: the API, the records, the netns, the container runtime. */
export interface SweepIo extends ExpectationIo {
  api: Pick<NodeApi, "listPods" | "readNamespace" | "readService" | "createPodEvent" | "labelPod" | "evictPod">;
  records: RecordStore;
  scan(targets: ScanTarget[]): Promise<Map<string, Observation>>;
  /** Writes the plans into a netns (a host path), atomically per family. */
  redirect(netns: string, backend: Backend, plans: RulePlan[]): Promise<void>;
  /** Moves the plans in a netns (a host path) from one backend to another, the new written before the old is removed. */
  move(netns: string, from: Backend, to: Backend, plans: RulePlan[]): Promise<void>;
  netnsExists(netns: string): boolean;
  /** The ids of the sandboxes the container runtime has (any state); undefined when it cannot say (no socket, no answer). */
  sandboxIds(): Promise<ReadonlySet<string> | undefined>;
  /** Where the container runtime says these pods' netns are; undefined when there is no runtime to ask (no CRI socket). */
  podNetns: ((podUids: string[]) => Promise<Map<string, SandboxLookup>>) | undefined;
  now(): number;
}

/** The API as the request's view (the agent's caches) answers it: its pods, its namespaces (a namespace it lacks from the API). */
function viewed(api: SweepIo["api"], view: SweepRequest["view"]): SweepIo["api"] {
  if (!view) return api;
  const namespaces = new Map(view.namespaces.map((namespace) => [namespace.metadata.name, namespace as V1Namespace]));
  return {
    ...api,
    listPods: async () => view.pods as V1Pod[],
    readNamespace: async (name) => namespaces.get(name) ?? api.readNamespace(name),
  };
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
async function act(
  action: RepairAction,
  entry: Expected,
  target: ScanTarget,
  netns: string,
  io: SweepIo,
  around: string[],
): Promise<RepairResult> {
  try {
    if (action === "redirect") {
      await io.redirect(netns, target.backend, target.plans);
      record(io, entry, target, netns, entry.record ?? { containerId: `repaired-${target.uid}`, ifname: "eth0" });
      // Its own rules are as planned now; what goes around them is another's, which meshcni does not remove.
      if (around.length > 0) return { failed: aroundUnremoved };
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

/** A protected pod whose redirect is in another backend than the node's: moved (when `act`), or said why not. */
async function moveToNodeBackend(
  audit: PodReport,
  entry: Expected,
  act: boolean,
  unconfirmed: string | undefined,
  io: SweepIo,
): Promise<void> {
  const target = entry.nodeBackend && moveTarget(audit, entry.record, entry.nodeBackend);
  if (!target || !entry.record) return;
  if ("stays" in target) audit.details.push(target.stays);
  else if (act && unconfirmed !== undefined)
    audit.details.push(`its redirect stays in the ${entry.record.backend} backend: ${unconfirmed}`);
  else if (!act)
    audit.details.push(
      `its redirect is in the ${entry.record.backend} backend, the node's is ${target.to}: a sweep that repairs moves it in place`,
    );
  else {
    audit.moved = await moveAttachment(io.records, entry.record, target.to, (...move) => io.move(...move));
    if (audit.moved) audit.details.push(moveText(audit.moved));
  }
}

/**
 * One pass over the node's meshed pods: classify each by what its netns holds; with a
 * policy, also record adopted pods, repair unprotected ones (an Event on each, saying
 * what was found and done), and remove records whose pod or netns is gone and the files
 * killed plugin processes left.
 */
export async function sweep(request: SweepRequest, hostIo: SweepIo): Promise<SweepReport> {
  const io = { ...hostIo, api: viewed(hostIo.api, request.view) };
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
    evictNamespaces: request.limits.evictNamespaces && new Set(request.limits.evictNamespaces),
    skipUids: new Set(request.limits.skipUids),
    evictionsLeft: request.limits.evictionsLeft,
  };
  const judged = expected.map((entry) => {
    const observation: Observation = observations.get(entry.pod.metadata?.uid ?? "") ?? {
      found: false,
      reason: entry.problem ?? "not looked into",
    };
    const audit: PodReport = entry.problem
      ? { uid: "", ...podKeyOf(entry.pod), status: "unknown", details: [entry.problem] }
      : classify(entry.pod, entry.record, observation, entry.recordDrift);
    if (observation.found && observation.seen) audit.seen = observation.seen;
    return { entry, observation, audit };
  });
  const confirmations = request.policy ? await confirmNetns(judged, io.podNetns) : new Map();
  for (const { entry, observation, audit } of judged) {
    reports.push(audit);
    const unconfirmed = observation.found ? netnsUnconfirmed(observation, confirmations.get(audit.uid)) : undefined;
    const movable = request.policy !== undefined && request.policy !== "none" && !limits.excludeNamespaces.has(audit.namespace);
    await moveToNodeBackend(audit, entry, movable, unconfirmed, io);
    if (!request.policy || !entry.target || !observation.found) continue;
    const acting = audit.status === "adopted" || isUnprotected(audit);
    if (acting && unconfirmed !== undefined) {
      Object.assign(audit, { skipped: `not acted on: ${unconfirmed}`, unconfirmed });
      continue;
    }
    if (audit.status === "adopted")
      record(io, entry, entry.target, observation.netns, { containerId: `adopted-${audit.uid}`, ifname: "eth0" });
    if (!isUnprotected(audit)) continue;
    const decision = repairAction(entry.pod, request.policy, limits);
    if (typeof decision === "object") {
      audit.skipped = decision.skip;
      continue;
    }
    audit.action = decision;
    audit.result = await act(decision, entry, entry.target, observation.netns, io, observation.around ?? []);
    if (decision === "evict" && audit.result === "done") limits.evictionsLeft--;
    // A blocked eviction is tried again at the next sweep, a throttled one after the server's wait: no Event each time.
    if (audit.result === "blocked" || (typeof audit.result === "object" && "throttledMs" in audit.result)) continue;
    const message = eventMessage(audit, decision, request.policy, audit.result, request.limits.retryMinutes);
    await io.api
      .createPodEvent(entry.pod, {
        reason: eventReasons[audit.status as "missing" | "drifted"],
        action: eventActions[decision],
        // Redirected in place: protected now, said as Normal (meshcni status lists a pod whose newest Event is a Warning).
        type: decision === "redirect" && audit.result === "done" ? "Normal" : "Warning",
        message,
      })
      .catch((error: unknown) => {
        audit.eventFailed = errorMessage(error);
      });
  }
  const removed = { podGone: 0, netnsGone: 0, sandboxGone: 0 };
  if (request.policy) {
    io.records.sweep();
    const podUids = new Set(allPods.map((pod) => pod.metadata?.uid ?? ""));
    const asked = request.sandboxes !== false && records.some((record) => pastGrace(record, io.now()));
    const sandboxes = asked ? await io.sandboxIds() : undefined;
    for (const { record, reason } of staleRecords(records, podUids, (netns) => io.netnsExists(netns), io.now(), sandboxes)) {
      io.records.remove({ containerID: record.containerId, ifname: record.ifname });
      removed[reason]++;
    }
  }
  const summary = Object.fromEntries(podStatuses.map((status) => [status, 0])) as Record<PodStatus, number>;
  for (const report of reports) summary[report.status]++;
  const backends = backendsAfter(expected, records, reports);
  return { node: request.node, pods: sortAudits(reports), summary, recordsRemoved: removed, backends };
}

/** Whether the node ends the sweep protected: every pod protected, adopted, or redirected now. */
export function allProtected(report: SweepReport): boolean {
  return report.pods.every(
    (pod) => pod.status === "protected" || pod.status === "adopted" || (pod.action === "redirect" && pod.result === "done"),
  );
}
