import { mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import * as v from "valibot";
import { readRegularFile } from "../file-open.js";
import { removeFile, sha256, sweepAbandoned, writeAtomic } from "../files.js";
import type { PodKey } from "../pod-key.js";
import type { RulePlan } from "../redirect/plan.js";
import { type Backend, backends } from "../redirect/redirector.js";
import { lockAttachment } from "./attachment-lock.js";
import { rulePlanSchema } from "./plan-schema.js";

/**
 * What ADD did for a meshed pod, kept on the host so `meshcni audit` can tell a pod that
 * went through meshcni from one that did not, and check its rules without the netconf.
 * One file per attachment (container id + ifname); nothing secret is in it.
 *
 * ADD writes it as "adding" before it touches the netns and as "added" once every
 * family's rules are in: an ADD killed in between leaves a record that says so, never
 * rules that no record explains.
 */
export interface AttachmentRecord {
  version: 1;
  state: "adding" | "added";
  pod: Required<PodKey>;
  containerId: string;
  ifname: string;
  netns: string;
  backend: Backend;
  plans: RulePlan[];
  time: string;
}

/** What ADD hands over; the version and the time are the store's. */
export type NewRecord = Omit<AttachmentRecord, "version" | "time">;

/** A runtime's attachment: the key of a record. */
export interface Attachment {
  containerID: string;
  ifname: string;
}

/** The records of one state dir. */
export interface RecordStore {
  write(record: NewRecord): void;
  /** Removes an attachment's record; one already gone is fine, any other failure names its errno. */
  remove(attachment: Attachment): void;
  /** Every readable record; a file that is not one (or vanished) is skipped. */
  list(): AttachmentRecord[];
  /** The records of one container's attachments (Multus gives a pod several). */
  forContainer(containerID: string): AttachmentRecord[];
  /** GC: removes the records of attachments not in `valid`; returns how many. */
  collect(valid: Attachment[]): number;
  /** Removes what killed plugin processes left here (temp files, lock files); returns their names. */
  sweep(): string[];
  /** The attachment's record, if it has a readable one. */
  read(attachment: Attachment): AttachmentRecord | undefined;
  /**
   * Holds the attachment for one writer of its rules and record (see lockAttachment); returns
   * what releases it. `createDir: false`: no lock where no writer has ever made the locks dir.
   */
  lock(attachment: Attachment, options?: { createDir: boolean }): Promise<() => void>;
}

/** How long a write waits for another of the same attachment: past the agent's writer's own limit (15 s), which kills it. */
export const attachmentLockWaitMs = 20_000;

// Records written before the state and before the fingerprint was dropped still parse.
const recordSchema = v.object({
  version: v.literal(1),
  state: v.optional(v.picklist(["adding", "added"]), "added"),
  pod: v.object({ namespace: v.string(), name: v.string(), uid: v.string() }),
  containerId: v.string(),
  ifname: v.string(),
  netns: v.string(),
  backend: v.picklist(backends),
  plans: v.array(rulePlanSchema),
  time: v.string(),
});

export const defaultStateDir = "/var/run/meshcni";

/** Where per-process lock files go (legacy iptables' XTABLES_LOCKFILE), so a sweep finds abandoned ones. */
export const locksDir = (stateDir: string) => join(stateDir, "locks");

/**
 * One part of a record's file name: the runtime's id as it is when it is short and plain
 * (so an operator can find a container's file), else a hash of it. Neither form holds "_",
 * which separates the parts, so no two attachments share a name.
 */
function namePart(id: string): string {
  return /^[A-Za-z0-9.-]{1,100}$/.test(id) && !id.startsWith(".") ? id : `h-${sha256(id).slice(0, 32)}`;
}

const fileName = ({ containerID, ifname }: Attachment) => `${namePart(containerID)}_${namePart(ifname)}.json`;
const attachmentOf = (record: { containerId: string; ifname: string }): Attachment => ({
  containerID: record.containerId,
  ifname: record.ifname,
});

/** One JSON file per attachment under `<stateDir>/attachments`, each written atomically. */
export function fileRecordStore(stateDir: string): RecordStore {
  const dir = join(stateDir, "attachments");
  const names = (): string[] => {
    try {
      return readdirSync(dir).filter((name) => name.endsWith(".json"));
    } catch {
      return [];
    }
  };
  const read = (name: string): AttachmentRecord[] => {
    try {
      const parsed = v.safeParse(recordSchema, JSON.parse(readRegularFile(join(dir, name), 1 << 20)));
      return parsed.success ? [parsed.output] : [];
    } catch {
      return [];
    }
  };
  const list = () => names().flatMap(read);
  const remove = (attachment: Attachment) => removeFile(join(dir, fileName(attachment)));
  return {
    write(record) {
      // Root's alone: a record names a pod's container and netns, which a caller of the agent's socket would aim with.
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      const full: AttachmentRecord = { version: 1, ...record, time: new Date().toISOString() };
      // No fsync (~0.5 ms a write on a disk, twice per ADD): the state dir is a tmpfs on a node, and a record lost
      // in a crash describes a netns the crash took too. The rename still makes a record whole or absent.
      writeAtomic(join(dir, fileName(attachmentOf(record))), `${JSON.stringify(full)}\n`, 0o600, { durable: false });
    },
    remove,
    list,
    forContainer(containerID) {
      const prefix = `${namePart(containerID)}_`;
      return names()
        .filter((name) => name.startsWith(prefix))
        .flatMap(read)
        .filter((record) => record.containerId === containerID);
    },
    collect(valid) {
      const keep = new Set(valid.map(fileName));
      const stale = list().filter((record) => !keep.has(fileName(attachmentOf(record))));
      for (const record of stale) remove(attachmentOf(record));
      return stale.length;
    },
    sweep: () => [...sweepAbandoned(dir), ...sweepAbandoned(locksDir(stateDir))],
    read: (attachment) => read(fileName(attachment))[0],
    lock: (attachment, options) =>
      lockAttachment(locksDir(stateDir), fileName(attachment), attachmentLockWaitMs, options?.createDir ?? true),
  };
}
