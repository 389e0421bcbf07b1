import type { AttachmentRecord } from "../state/records.js";

/** A record younger than this is never taken as stale: its pod may not be listed yet. */
export const recordGraceMs = 30_000;

export type RecordRemoval = "podGone" | "netnsGone" | "sandboxGone";

export const pastGrace = (record: AttachmentRecord, now: number) => now - Date.parse(record.time) >= recordGraceMs;

/**
 * Records whose pod is gone from the node, whose netns is, or whose sandbox the container
 * runtime no longer has (`sandboxes`, when it could say: a runtime that never calls CNI GC,
 * as containerd never does): host state must not outlive what it describes.
 */
export function staleRecords(
  records: AttachmentRecord[],
  podUids: ReadonlySet<string>,
  netnsExists: (netns: string) => boolean,
  now: number,
  sandboxes: ReadonlySet<string> | undefined,
): Array<{ record: AttachmentRecord; reason: RecordRemoval }> {
  return records.flatMap((record) => {
    if (!pastGrace(record, now)) return [];
    const reason: RecordRemoval | undefined = !podUids.has(record.pod.uid)
      ? "podGone"
      : !netnsExists(record.netns)
        ? "netnsGone"
        : sandboxes && !sandboxes.has(record.containerId)
          ? "sandboxGone"
          : undefined;
    return reason ? [{ record, reason }] : [];
  });
}
