import { errorMessage } from "../errors.js";
import { diffTable } from "../redirect/diff.js";
import type { RulePlan } from "../redirect/plan.js";
import type { Backend, Redirector } from "../redirect/redirector.js";
import type { AttachmentRecord, RecordStore } from "../state/records.js";
import type { PodAudit } from "./classify.js";

/**
 * Moving a running pod's redirect to the node's backend. An operator who changes meshcni's
 * iptables-mode (iptables to nftables, or back) gets new pods in the new backend while
 * running ones hold the rules their ADD wrote; the agent moves those in place, with no
 * restart. The plan is written with the new backend and read back before the old backend's
 * rules are removed, so one of them redirects at every moment: both hold the same plan, and
 * the kernel runs a later nat chain only for a connection an earlier one left alone.
 */

/** What a sweep did about a pod whose redirect is in another backend than the node's. */
export interface Move {
  from: Backend;
  to: Backend;
  failed?: string | undefined;
}

/**
 * The backend to move a pod's redirect to, or why it stays. Only a protected pod with a
 * finished ADD record moves (anything else is a repair's, in the backend that holds it).
 * "plain" is whatever `iptables` is on the host: it may be the very tables legacy or nft
 * write, and removing the old would then remove the new; those pairs stay.
 */
export function moveTarget(
  audit: PodAudit,
  record: AttachmentRecord | undefined,
  nodeBackend: Backend,
): { to: Backend } | { stays: string } | undefined {
  if (record?.state !== "added" || audit.status !== "protected" || record.backend === nodeBackend) return undefined;
  const iptables = (backend: Backend) => backend !== "nftables";
  if ((record.backend === "plain" || nodeBackend === "plain") && iptables(record.backend) && iptables(nodeBackend))
    return {
      stays: `its redirect is in the ${record.backend} backend and the node's is ${nodeBackend}, which may be the same tables: it stays until the pod restarts`,
    };
  return { to: nodeBackend };
}

/** A move in words, for the audit's details. */
export function moveText(move: Move): string {
  return move.failed === undefined
    ? `its redirect moved from the ${move.from} backend to ${move.to}, the node's (the new rules were in place before the old were removed)`
    : `its redirect is in the ${move.from} backend, the node's is ${move.to}: the move failed (${move.failed}); the ${move.from} rules stay and redirect, tried again at the next sweep`;
}

/**
 * Moves the plans from one backend to another, in the netns the caller is in: writes them
 * with `writer`, checks it holds each as planned (its own rules only: the old backend's
 * NAT may run first until removed, and holds the same plan), then removes `old`'s. Throws,
 * leaving the old rules, when the new are not as planned.
 */
export async function moveRules(plans: RulePlan[], writer: Redirector, old: Redirector): Promise<void> {
  await writer.apply(plans);
  for (const plan of plans) {
    const differences = diffTable(writer.expected(plan), await writer.read(plan.family));
    if (differences.length > 0)
      throw new Error(`the ${writer.backend} backend does not hold the plan after writing it: ${plan.family}: ${differences.join("; ")}`);
  }
  await old.remove(plans.map((plan) => plan.family));
}

/**
 * Moves one attachment's redirect under its lock (no ADD, DEL or writer of it meanwhile),
 * from the backend its record names, then records the new one. A record gone or changed by
 * the time the lock is held (a DEL, a new ADD) is left as it is now.
 */
export async function moveAttachment(
  records: RecordStore,
  seen: AttachmentRecord,
  to: Backend,
  move: (netns: string, from: Backend, to: Backend, plans: RulePlan[]) => Promise<void>,
): Promise<Move | undefined> {
  const attachment = { containerID: seen.containerId, ifname: seen.ifname };
  const failed = (error: unknown): Move => ({ from: seen.backend, to, failed: errorMessage(error) });
  const release = await records.lock(attachment).catch((error: unknown) => failed(error));
  if (typeof release !== "function") return release;
  try {
    const now = records.read(attachment);
    if (now?.state !== "added" || now.backend !== seen.backend || now.netns !== seen.netns) return undefined;
    await move(now.netns, now.backend, to, now.plans);
    const { pod, containerId, ifname, netns, plans } = now;
    records.write({ state: "added", pod, containerId, ifname, netns, backend: to, plans });
    return { from: now.backend, to };
  } catch (error) {
    return failed(error);
  } finally {
    release();
  }
}

/** A sweep's `backends`: the node's (from any pod's plan), and the records' once its moves are done. */
export function backendsAfter(
  expected: Array<{ nodeBackend?: Backend }>,
  records: AttachmentRecord[],
  reports: Array<{ moved?: Move | undefined }>,
): { node?: Backend; records: Partial<Record<Backend, number>> } {
  const node = expected.find((entry) => entry.nodeBackend)?.nodeBackend;
  const tally = recordsByBackend(
    records,
    reports.map((report) => report.moved),
  );
  return node ? { node, records: tally } : { records: tally };
}

/** The node's ADD records by the backend holding their redirect once this sweep's moves are done. */
export function recordsByBackend(records: AttachmentRecord[], moves: Array<Move | undefined>): Partial<Record<Backend, number>> {
  const tally: Partial<Record<Backend, number>> = {};
  const add = (backend: Backend, count: number) => {
    tally[backend] = (tally[backend] ?? 0) + count;
  };
  for (const record of records) if (record.state === "added") add(record.backend, 1);
  for (const move of moves) {
    if (!move || move.failed !== undefined) continue;
    add(move.from, -1);
    add(move.to, 1);
  }
  return Object.fromEntries(Object.entries(tally).filter(([, count]) => count > 0));
}
