import { mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import * as v from "valibot";
import { writeAtomic } from "../files.js";
import type { Backend } from "../iptables/backend.js";
import type { RulePlan } from "../iptables/plan.js";
import type { PodKey } from "../pod-key.js";

/**
 * What ADD did for a meshed pod, kept on the host so `meshcni audit` can tell a pod that
 * went through meshcni from one that did not, and check its rules without the netconf.
 * One file per attachment (container id + ifname); nothing secret is in it.
 */
export interface AttachmentRecord {
  version: 1;
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
  remove(attachment: Attachment): void;
  /** Every readable record; a file that is not one (or vanished) is skipped. */
  list(): AttachmentRecord[];
  /** GC: removes the records of attachments not in `valid`; returns how many. */
  collect(valid: Attachment[]): number;
}

// Records written before the fingerprint was dropped still parse: unknown keys are ignored.
const recordSchema = v.object({
  version: v.literal(1),
  pod: v.object({ namespace: v.string(), name: v.string(), uid: v.string() }),
  containerId: v.string(),
  ifname: v.string(),
  netns: v.string(),
  backend: v.picklist(["legacy", "nft", "plain"]),
  plans: v.array(
    v.object({
      family: v.picklist(["ipv4", "ipv6"]),
      chains: v.record(v.string(), v.array(v.array(v.string()))),
      jumps: v.array(v.object({ from: v.picklist(["PREROUTING", "OUTPUT"]), to: v.string(), args: v.array(v.string()) })),
    }),
  ),
  time: v.string(),
});

export const defaultStateDir = "/var/run/meshcni";

/** Container ids and ifnames are runtime-chosen; keep the file name to safe characters. */
function fileName({ containerID, ifname }: Attachment): string {
  return `${containerID}_${ifname}.json`.replace(/[^A-Za-z0-9_.-]/g, "-");
}

const attachmentOf = (record: { containerId: string; ifname: string }): Attachment => ({
  containerID: record.containerId,
  ifname: record.ifname,
});

/** One JSON file per attachment under `<stateDir>/attachments`, each written atomically. */
export function fileRecordStore(stateDir: string): RecordStore {
  const dir = join(stateDir, "attachments");
  const list = (): AttachmentRecord[] => {
    let names: string[];
    try {
      names = readdirSync(dir).filter((name) => name.endsWith(".json"));
    } catch {
      return [];
    }
    return names.flatMap((name) => {
      try {
        const parsed = v.safeParse(recordSchema, JSON.parse(readFileSync(join(dir, name), "utf8")));
        return parsed.success ? [parsed.output] : [];
      } catch {
        return [];
      }
    });
  };
  const remove = (attachment: Attachment) => rmSync(join(dir, fileName(attachment)), { force: true });
  return {
    write(record) {
      mkdirSync(dir, { recursive: true, mode: 0o755 });
      const full: AttachmentRecord = { version: 1, ...record, time: new Date().toISOString() };
      writeAtomic(join(dir, fileName(attachmentOf(record))), `${JSON.stringify(full, null, 2)}\n`);
    },
    remove,
    list,
    collect(valid) {
      const keep = new Set(valid.map(fileName));
      const stale = list().filter((record) => !keep.has(fileName(attachmentOf(record))));
      for (const record of stale) remove(attachmentOf(record));
      return stale.length;
    },
  };
}
