import type { V1Pod } from "@kubernetes/client-node";
import { isMeshed } from "../mesh/pod.js";
import { formatPodKey, podKeyOf } from "../pod-key.js";
import type { AttachmentRecord } from "../state/records.js";

export type PodStatus = "protected" | "missing" | "drifted" | "unknown";

export interface PodAudit {
  namespace: string;
  name: string;
  uid: string;
  status: PodStatus;
  /** Why, for anything but protected: the differences for drifted. */
  details: string[];
}

/** What inspecting a recorded attachment's netns found. */
export type Inspection = { status: "protected" | "unknown" | "drifted"; details: string[] };

/**
 * The pods whose redirect can be judged: meshed, with a pod network (not hostNetwork),
 * and with a sandbox whose network is up (an IP, set after the CNI ADD), not finished.
 */
export function podsToAudit(pods: V1Pod[]): V1Pod[] {
  return pods.filter(
    (pod) =>
      isMeshed(pod) &&
      !pod.spec?.hostNetwork &&
      Boolean(pod.status?.podIP) &&
      (pod.status?.phase === "Running" || pod.status?.phase === "Pending"),
  );
}

/** A pod's newest record: a recreated sandbox leaves the old one until DEL or GC. */
export function newestRecordByUid(records: AttachmentRecord[]): Map<string, AttachmentRecord> {
  const newest = new Map<string, AttachmentRecord>();
  for (const record of records) {
    const seen = newest.get(record.pod.uid);
    if (!seen || seen.time < record.time) newest.set(record.pod.uid, record);
  }
  return newest;
}

export async function auditPods(
  pods: V1Pod[],
  records: AttachmentRecord[],
  inspect: (record: AttachmentRecord) => Promise<Inspection>,
): Promise<PodAudit[]> {
  const byUid = newestRecordByUid(records);
  const audits: PodAudit[] = [];
  for (const pod of podsToAudit(pods)) {
    const base = { uid: "", ...podKeyOf(pod) };
    const record = byUid.get(base.uid);
    if (!record) {
      audits.push({ ...base, status: "missing", details: ["no ADD record: the pod's network was set up without meshcni in the chain"] });
      continue;
    }
    const inspection = await inspect(record);
    // An ADD stopped midway (killed) left its record saying so: what it wrote may be partial.
    if (record.state === "adding" && inspection.status === "drifted") inspection.details.unshift(unfinishedAdd);
    audits.push({ ...base, ...inspection });
  }
  return audits.sort((a, b) => formatPodKey(a).localeCompare(formatPodKey(b)));
}

export const unfinishedAdd = "ADD did not finish (the plugin was stopped midway); the runtime's DEL removes what it wrote";

export function isUnprotected(audit: PodAudit): boolean {
  return audit.status === "missing" || audit.status === "drifted";
}
