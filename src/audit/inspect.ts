import { existsSync } from "node:fs";
import { join } from "node:path";
import { diffPlans } from "../iptables/apply.js";
import { createIptablesRunner } from "../iptables/exec.js";
import { inNetns, NetnsGoneError } from "../netns/enter.js";
import { type AttachmentRecord, locksDir } from "../state/records.js";
import type { Inspection } from "./classify.js";

/**
 * Compares a recorded attachment's netns with the plan ADD recorded, using the backend
 * ADD used. `hostRoot` prefixes the netns path when the host is mounted elsewhere.
 */
export async function inspectRecord(record: AttachmentRecord, hostRoot: string, stateDir: string): Promise<Inspection> {
  const netns = join(hostRoot || "/", record.netns);
  if (!existsSync(netns)) return { status: "unknown", details: [`netns ${record.netns} is gone`] };
  const runner = await createIptablesRunner(record.backend, { wait: false, lockDir: locksDir(stateDir) });
  try {
    const differences = await inNetns(netns, () => diffPlans(runner, record.plans));
    return differences.length === 0 ? { status: "protected", details: [] } : { status: "drifted", details: differences };
  } catch (error) {
    if (error instanceof NetnsGoneError) return { status: "unknown", details: [error.message] };
    throw error;
  } finally {
    runner.close();
  }
}
