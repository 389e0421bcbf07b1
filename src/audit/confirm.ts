import type { SandboxLookup } from "../cri/runtime.js";
import { errorMessage } from "../errors.js";
import { isUnprotected, type Observation } from "./classify.js";
import type { PodReport } from "./contract.js";
import type { Expected } from "./expectation.js";

/**
 * Why a sweep may not write into the netns it looked into for a pod, or undefined when it
 * may. Root writes a pod's plan only where the container runtime says that pod's sandbox
 * is: an ADD record is a file on the node's disk, so a netns known from it alone is the
 * record's word. `lookup` is the runtime's answer for the pod; `"no runtime"` when there is
 * none to ask.
 */
export function netnsUnconfirmed(
  observation: Extract<Observation, { found: true }>,
  lookup: SandboxLookup | "no runtime" | undefined,
): string | undefined {
  if (observation.identifiedBy === "runtime") return undefined;
  if (lookup === "no runtime") return "no container runtime to confirm that its netns is the pod's (see --cri-socket)";
  if (lookup === undefined) return "the container runtime was not asked about it";
  if ("problem" in lookup) return `the container runtime did not confirm its netns: ${lookup.problem}`;
  if (lookup.netns !== observation.netns)
    return `its ADD record names netns ${observation.netns}, but the container runtime says the pod's sandbox has ${lookup.netns}`;
  return undefined;
}

/**
 * The container runtime's word on the netns of each pod a sweep would write for (a repair,
 * an adoption's record, a move) that it found by its record alone, asked once for all;
 * "no runtime" for each when there is none to ask.
 */
export async function confirmNetns(
  judged: Array<{ entry: Expected; observation: Observation; audit: PodReport }>,
  podNetns: ((podUids: string[]) => Promise<Map<string, SandboxLookup>>) | undefined,
): Promise<Map<string, SandboxLookup | "no runtime">> {
  const uids = judged
    .filter(({ entry, observation, audit }) => {
      const moving = entry.record && entry.nodeBackend && entry.record.backend !== entry.nodeBackend;
      const writes = isUnprotected(audit) || audit.status === "adopted" || moving;
      return observation.found && observation.identifiedBy !== "runtime" && writes;
    })
    .map(({ audit }) => audit.uid);
  if (uids.length === 0) return new Map();
  if (!podNetns) return new Map(uids.map((uid) => [uid, "no runtime"]));
  const lookups = await podNetns(uids).catch((error: unknown) => errorMessage(error));
  if (typeof lookups === "string") return new Map(uids.map((uid) => [uid, { problem: `cannot ask the container runtime: ${lookups}` }]));
  return lookups;
}
