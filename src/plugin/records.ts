import { mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import * as v from "valibot";
import { sha256, writeAtomic } from "../files.js";
import type { Backend, DetectionCache } from "../iptables/backend.js";
import type { RulePlan } from "../iptables/plan.js";

/**
 * What ADD did for a meshed pod, kept on the host so `meshcni audit` can tell a pod that
 * went through meshcni from one that did not, and check its rules without the netconf.
 * One file per attachment (container id + ifname); nothing secret is in it.
 */
export interface AttachmentRecord {
  version: 1;
  pod: { namespace: string; name: string; uid: string };
  containerId: string;
  ifname: string;
  netns: string;
  backend: Backend;
  plans: RulePlan[];
  fingerprint: string;
  time: string;
}

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
  fingerprint: v.string(),
  time: v.string(),
});

export const defaultStateDir = "/var/run/meshcni";

function recordsDir(stateDir: string): string {
  return join(stateDir, "attachments");
}

/** Container ids and ifnames are runtime-chosen; keep the file name to safe characters. */
function fileName(containerId: string, ifname: string): string {
  return `${containerId}_${ifname}.json`.replace(/[^A-Za-z0-9_.-]/g, "-");
}

export function planFingerprint(plans: RulePlan[]): string {
  return sha256(JSON.stringify(plans));
}

export function writeRecord(stateDir: string, record: Omit<AttachmentRecord, "version" | "fingerprint" | "time">): void {
  const dir = recordsDir(stateDir);
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  const full: AttachmentRecord = { version: 1, ...record, fingerprint: planFingerprint(record.plans), time: new Date().toISOString() };
  writeAtomic(join(dir, fileName(record.containerId, record.ifname)), `${JSON.stringify(full, null, 2)}\n`);
}

export function removeRecord(stateDir: string, containerId: string, ifname: string): void {
  rmSync(join(recordsDir(stateDir), fileName(containerId, ifname)), { force: true });
}

/** Every readable record; a file that is not one (or vanished) is skipped. */
export function readRecords(stateDir: string): AttachmentRecord[] {
  let names: string[];
  try {
    names = readdirSync(recordsDir(stateDir)).filter((name) => name.endsWith(".json"));
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    try {
      const parsed = v.safeParse(recordSchema, JSON.parse(readFileSync(join(recordsDir(stateDir), name), "utf8")));
      return parsed.success ? [parsed.output] : [];
    } catch {
      return [];
    }
  });
}

/** The auto-detected backend, kept in the state dir (tmpfs: gone at reboot). */
export function detectionCache(stateDir: string): DetectionCache {
  const path = join(stateDir, "iptables-backend");
  return {
    read() {
      try {
        const backend = readFileSync(path, "utf8").trim();
        return backend === "legacy" || backend === "nft" ? backend : undefined;
      } catch {
        return undefined;
      }
    },
    write(backend) {
      try {
        mkdirSync(stateDir, { recursive: true, mode: 0o755 });
        writeAtomic(path, `${backend}\n`);
      } catch {
        // Only a cache: detection runs again next time.
      }
    },
  };
}

/** GC: removes records of attachments the runtime no longer lists; returns how many. */
export function collectRecords(stateDir: string, valid: Array<{ containerID: string; ifname: string }>): number {
  const keep = new Set(valid.map((attachment) => fileName(attachment.containerID, attachment.ifname)));
  let removed = 0;
  for (const record of readRecords(stateDir)) {
    const name = fileName(record.containerId, record.ifname);
    if (!keep.has(name)) {
      rmSync(join(recordsDir(stateDir), name), { force: true });
      removed++;
    }
  }
  return removed;
}
