import type { V1Pod } from "@kubernetes/client-node";
import { isMeshed } from "../mesh/pod.js";
import { formatPodKey, podKeyOf } from "../pod-key.js";
import type { AttachmentRecord } from "../state/records.js";
import type { SeenNetns } from "./netns-reading.js";

/**
 * A meshed pod's redirect as its netns holds it: protected (the plan, as recorded),
 * adopted (the plan, set up without a meshcni record: linkerd-cni, an earlier install),
 * missing (no redirect), drifted (rules differ from the plan), unknown (no netns found,
 * or no plan can be made).
 */
export const podStatuses = ["protected", "adopted", "missing", "drifted", "unknown"] as const;
export type PodStatus = (typeof podStatuses)[number];

export interface PodAudit {
  namespace: string;
  name: string;
  uid: string;
  status: PodStatus;
  /** Why, for anything but protected: the differences for drifted. */
  details: string[];
}

/**
 * How a pod's netns was known: ADD's record, the container runtime, or only an IP found
 * in it (a hint: any pod can put any address on its own interfaces).
 */
export type Identified = "record" | "runtime" | "ip";

/** What looking into a pod's netns found, or why it could not be looked into. */
export type Observation =
  | { found: false; reason: string }
  | {
      found: true;
      /** The netns as the host names it. */
      netns: string;
      identifiedBy: Identified;
      /** How the netns's tables differ from the pod's plan; empty when they match. */
      differences: string[];
      /** Whether any chain or jump of the redirect is there at all. */
      hasRedirect: boolean;
      /** Why its rules could not be read (too many, too slow): it is not taken as protected. */
      unreadable?: string;
      /** Of the differences, rules not meshcni's that send TCP around its redirect (untracked, another table's NAT): no rewrite of its own removes them. */
      around?: string[];
      /** Where the record's plan differs from the pod's: whether the netns holds the record's. */
      matchesRecord?: boolean;
      /** The reading, when it found the plan and nothing around it, and nf_tables' generation covers it: a later sweep's shortcut. */
      seen?: SeenNetns;
    };

export const unfinishedAdd = "ADD did not finish (the plugin was stopped midway); the runtime's DEL removes what it wrote";

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

/** What the audit says of a pod whose netns holds the plan ADD recorded, from before what it reads now changed. */
export const asAdded =
  "its rules are the plan ADD made; its annotations, its namespace's or meshcni's entry changed since: restart the pod to take them";

/**
 * Judges one pod from what its netns holds against the pod's plan now, its record (if ADD
 * made one) and how the record's plan differs from the pod's (`recordDrift`). A record that
 * differs while the netns holds the pod's plan is a finding (changed on the node's disk; a
 * repair records the pod's plan). A netns that holds the record's plan, where it differs, is
 * protected: the netns and the record were written together at ADD (no caller can make the
 * agent write a plan other than its own entry's), and a running pod keeps the settings it
 * started with, as its proxy does.
 */
export function classify(pod: V1Pod, record: AttachmentRecord | undefined, observation: Observation, recordDrift: string[] = []): PodAudit {
  const base = { uid: "", ...podKeyOf(pod) };
  if (!observation.found) return { ...base, status: "unknown", details: [observation.reason] };
  const { differences, hasRedirect } = observation;
  if (observation.unreadable !== undefined)
    return {
      ...base,
      status: "drifted",
      details: [`its netns could not be read (${observation.unreadable}): what it holds is unknown, so it is not taken as protected`],
    };
  if (observation.identifiedBy === "ip") {
    // Never proof: no record, no status to act on, until the runtime can be asked.
    const holds = differences.length === 0 ? "meshcni's plan" : hasRedirect ? "rules that differ from the plan" : "no redirect";
    return {
      ...base,
      status: "unknown",
      details: [
        `only its IP points to netns ${observation.netns} (no container runtime to confirm it; see --cri-socket), which holds ${holds}`,
        ...(hasRedirect ? differences : []),
      ],
    };
  }
  if (differences.length === 0 && recordDrift.length === 0) {
    return record
      ? { ...base, status: "protected", details: [] }
      : {
          ...base,
          status: "adopted",
          details: ["no meshcni record, but its netns holds meshcni's plan (set up by linkerd-cni or an earlier install)"],
        };
  }
  // Looked at only where the record's plan differs from the pod's (ScanTarget.recordPlans).
  if (observation.matchesRecord) return { ...base, status: "protected", details: [asAdded] };
  if (!hasRedirect) {
    const why = record
      ? "its netns holds none of the redirect ADD recorded"
      : "no ADD record and no redirect in its netns: the pod's network was set up without meshcni in the chain";
    return { ...base, status: "missing", details: [why] };
  }
  const found = differences.length > 0 ? differences : recordDrift;
  return { ...base, status: "drifted", details: [...(record?.state === "adding" ? [unfinishedAdd] : []), ...found] };
}

export function sortAudits<T extends PodAudit>(audits: T[]): T[] {
  return audits.sort((a, b) => formatPodKey(a).localeCompare(formatPodKey(b)));
}

export function isUnprotected(audit: PodAudit): boolean {
  return audit.status === "missing" || audit.status === "drifted";
}
