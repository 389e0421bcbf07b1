import { createHash } from "node:crypto";
import { join } from "node:path";
import type { SweepReport, SweepRequest } from "../../audit/contract.js";
import type { NetnsLook } from "../../audit/netns-look.js";
import { inNetnsDirs } from "../../netns/paths.js";
import { dirSignature } from "../watch.js";

/** A pod's netns as a clean sweep read it: its path, its identity (device:inode) and its nf_tables generation then. */
export interface ReadClean {
  path: string;
  identity: string;
  generation: number;
}

/**
 * The pods' netns a full sweep read, when it found the node clean: every pod protected, its
 * netns read and its generation kept (none in iptables-legacy), nothing done, said or left
 * alone, no record removed. Undefined otherwise, pure.
 */
export function readClean(report: SweepReport, netnsDirs: string[]): ReadClean[] | undefined {
  if (Object.values(report.recordsRemoved).some((count) => count > 0)) return undefined;
  const read: ReadClean[] = [];
  for (const pod of report.pods) {
    const { seen } = pod;
    const quiet = !pod.action && !pod.moved && !pod.skipped && !pod.unconfirmed && !pod.eventFailed && pod.details.length === 0;
    if (pod.status !== "protected" || !seen || !quiet) return undefined;
    // seen.netns is "<path> <device:inode>" (audit/scan.ts).
    const at = seen.netns.lastIndexOf(" ");
    const path = seen.netns.slice(0, at);
    if (at < 0 || !inNetnsDirs(path, netnsDirs)) return undefined;
    read.push({ path, identity: seen.netns.slice(at + 1), generation: seen.generation });
  }
  return read;
}

/** Whether each netns is as the clean sweep read it (the same file, its generation unmoved), pure. */
export function unmoved(read: ReadClean[], looked: NetnsLook[]): boolean {
  return (
    looked.length === read.length &&
    read.every((clean, i) => looked[i]?.identity === clean.identity && looked[i]?.generation === clean.generation)
  );
}

/** How each netns at these paths is now, asked of the agent's writer; undefined when it cannot be asked. */
export type LookAtNetns = (paths: string[], signal: AbortSignal) => Promise<NetnsLook[] | undefined>;

/**
 * What lets an idle node's full sweep start no process: the last full sweep found the node
 * clean, and since then its request (but the readings it handed back) is the same, the state
 * dir's files are as it left them, and every pod's netns is the same file at an unmoved
 * nf_tables generation (the kernel counts every change to its rules, iptables-nft's
 * included). Anything else, no fresh view of the node's pods, or no writer to look, runs the sweep. A sweep asking the runtime
 * for its sandboxes (every 10 minutes) always runs.
 */
export class CleanSweeps {
  private last: { key: string; read: ReadClean[] } | undefined;

  constructor(
    private readonly stateDir: string,
    private readonly netnsDirs: string[],
    private readonly look: LookAtNetns | undefined,
  ) {}

  /** Unchanged since the last clean full sweep, or the key this request is taken under (for took()). */
  async check(request: SweepRequest, signal: AbortSignal): Promise<{ unchanged: true } | { key: string }> {
    const key = this.key(request);
    const last = this.last;
    // Without the caches' view (a watch behind), what the API holds now is unknown here: the sweep lists it.
    if (!last || last.key !== key || request.sandboxes !== false || !request.view || !this.look) return { key };
    const looked = await this.look(
      last.read.map((clean) => clean.path),
      signal,
    ).catch(() => undefined);
    return looked && unmoved(last.read, looked) ? { unchanged: true } : { key };
  }

  /** A full sweep's report, asked under `key`: clean, and the state dir still as it was asked, it is what the next is held to. */
  took(key: string, request: SweepRequest, report: SweepReport): void {
    const read = readClean(report, this.netnsDirs);
    this.last = read && this.key(request) === key ? { key, read } : undefined;
  }

  /** Anything else swept (a changed pod, at once): the next full sweep runs. */
  forget(): void {
    this.last = undefined;
  }

  private key(request: SweepRequest): string {
    const { seen: _handedBack, sandboxes: _asked, ...asked } = request;
    // The state dir's files a sweep reads (the ADD records, the backend detected), as they stand: one written, replaced or edited in place differs.
    const files = [this.stateDir, join(this.stateDir, "attachments")].map((dir) => dirSignature(dir));
    return createHash("sha256")
      .update(JSON.stringify([asked, files]))
      .digest("hex");
  }
}
