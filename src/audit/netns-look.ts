import { statSync } from "node:fs";
import { holdsLegacyTables } from "../iptables/legacy-around.js";
import { inNetns } from "../netns/enter.js";
import { rulesetGeneration } from "../nftables/generation.js";

/** A file's identity as the sweeps name a netns: `device:inode`. */
const identityOf = (stats: { dev: number; ino: number }) => `${stats.dev}:${stats.ino}`;

/** A netns file's identity (undefined: nothing there). */
export function netnsIdentity(path: string): string | undefined {
  const stats = statSync(path, { throwIfNoEntry: false });
  return stats && identityOf(stats);
}

/**
 * nf_tables' generation in the netns this thread is in, when it covers every rule there:
 * undefined where iptables-legacy has a table (outside nf_tables) or nf_tables cannot say.
 */
export async function coveredGeneration(): Promise<number | undefined> {
  return holdsLegacyTables() ? undefined : rulesetGeneration().catch(() => undefined);
}

/** A netns as it is now: its identity, and its covered generation (each absent when it cannot be had). */
export interface NetnsLook {
  identity?: string | undefined;
  generation?: number | undefined;
}

/**
 * Each netns at these host paths as it is now, in order: what tells whether anything in it
 * moved since a sweep read it (the agent's writer answers this, so an idle node's sweep
 * starts no process). The generation is read in the very netns whose identity is given.
 */
export async function lookAtNetns(paths: string[]): Promise<NetnsLook[]> {
  const looks: NetnsLook[] = [];
  for (const path of paths) {
    const stats = statSync(path, { throwIfNoEntry: false });
    if (!stats) {
      looks.push({});
      continue;
    }
    const identity = identityOf(stats);
    const generation = await inNetns(path, coveredGeneration, { dev: stats.dev, ino: stats.ino }).catch(() => undefined);
    looks.push(generation === undefined ? { identity } : { identity, generation });
  }
  return looks;
}
