import { createHash } from "node:crypto";
import * as v from "valibot";
import type { RulePlan } from "../redirect/plan.js";
import type { Backend, Redirector } from "../redirect/redirector.js";
import type { Family } from "../redirect/spec.js";
import { nonNegativeInteger } from "../schema.js";

/**
 * A pod's netns as a sweep read it and found it holding the pod's plan, nothing around it:
 * which netns (its path and device:inode), the nf_tables generation read before its rules
 * were, the plans it was compared with (a digest), and what the reading said. The agent hands
 * the last one back to its next sweep (the sweep contract carries these entries), which reads
 * that netns's rules again only if any of it changed.
 */
export const seenNetnsEntries = {
  netns: v.string(),
  generation: nonNegativeInteger,
  plans: v.string(),
  hasRedirect: v.boolean(),
  matchesRecord: v.optional(v.boolean()),
};

export type SeenNetns = v.InferOutput<v.ObjectSchema<typeof seenNetnsEntries, undefined>>;

/** What a pod's netns is compared with, as a digest: its backend, its plans, its record's plans. */
export function plansDigest(target: { backend: Backend; plans: RulePlan[]; recordPlans?: RulePlan[] | undefined }): string {
  const compared = JSON.stringify([target.backend, target.plans, target.recordPlans ?? null]);
  return createHash("sha256").update(compared).digest("hex");
}

/**
 * Whether an earlier reading still holds, pure: the same netns, the same plans, and a
 * generation that did not move. Only a generation read now counts (undefined: the netns has
 * rules the generation does not cover, or it could not be read), and only for a redirect in
 * nf_tables (iptables-legacy's rules are outside it).
 */
export function stillHolds(
  earlier: SeenNetns | undefined,
  now: Pick<SeenNetns, "netns" | "generation" | "plans"> | undefined,
): earlier is SeenNetns {
  return (
    earlier !== undefined &&
    now !== undefined &&
    earlier.netns === now.netns &&
    earlier.generation === now.generation &&
    earlier.plans === now.plans
  );
}

/** What reads a pod's netns, in the netns this thread is in. */
export interface NetnsReader {
  inspect(redirector: Redirector, plans: RulePlan[]): Promise<{ differences: string[]; hasRedirect: boolean }>;
  /** What sends TCP around a redirect held by `backend`, outside meshcni's rules: once per pod. */
  around(backend: Backend, families: Family[]): Promise<string[]>;
  /** nf_tables' generation in this netns, when it covers every rule read here (no iptables-legacy table); else undefined. */
  generation(): Promise<number | undefined>;
}

/** A pod's netns as read (or as an earlier reading that still holds says): how it differs from the plans, and what goes around them. */
export interface NetnsReading {
  differences: string[];
  hasRedirect: boolean;
  around: string[];
  matchesRecord?: boolean;
  seen?: SeenNetns;
}

/**
 * Reads a pod's netns (the one this thread is in, named by `identity`: its path and device:inode) against its plans
 * and its record's, unless an earlier reading of it still holds.
 */
export async function readPodNetns(
  target: { uid: string; backend: Backend; plans: RulePlan[]; recordPlans?: RulePlan[] | undefined },
  identity: string,
  earlier: SeenNetns | undefined,
  io: NetnsReader,
  redirector: (backend: Backend) => Promise<Redirector>,
): Promise<NetnsReading> {
  // Read before the rules: a change while they are read moves it, and the next sweep reads them again.
  const generation = target.backend === "legacy" ? undefined : await io.generation();
  const reading = generation === undefined ? undefined : { netns: identity, generation, plans: plansDigest(target) };
  if (stillHolds(earlier, reading)) {
    const { hasRedirect, matchesRecord } = earlier;
    return { differences: [], hasRedirect, around: [], ...(matchesRecord === undefined ? {} : { matchesRecord }), seen: earlier };
  }
  const found = await io.inspect(await redirector(target.backend), target.plans);
  // Listed once per pod, whatever plans it is compared with: none of it is meshcni's, and all of it is a difference.
  const around = await io.around(
    target.backend,
    target.plans.map((plan) => plan.family),
  );
  const asRecorded = target.recordPlans && (await io.inspect(await redirector(target.backend), target.recordPlans));
  const matchesRecord = asRecorded ? { matchesRecord: asRecorded.differences.length === 0 && around.length === 0 } : {};
  const differences = [...found.differences, ...around];
  const seen = reading && differences.length === 0 ? { seen: { ...reading, hasRedirect: found.hasRedirect, ...matchesRecord } } : {};
  return { hasRedirect: found.hasRedirect, differences, around, ...matchesRecord, ...seen };
}
