import { readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { agentStateDir, paths } from "./layout.js";

const attachments = join(agentStateDir, "attachments");

/** What the tests read of a pod's ADD record on the node. */
export interface PodRecord {
  pod: { name: string };
  netns: string;
  backend: string;
}

/** A pod's ADD record on the node and its file; throws when it has none. */
export function recordFileOf(pod: string): { file: string; record: PodRecord } {
  for (const name of readdirSync(attachments).filter((entry) => entry.endsWith(".json"))) {
    const file = join(attachments, name);
    const record = JSON.parse(readFileSync(file, "utf8")) as PodRecord;
    if (record.pod.name === pod) return { file, record };
  }
  throw new Error(`no ADD record for pod ${pod}`);
}

export const recordOf = (pod: string): PodRecord => recordFileOf(pod).record;

/** Rewrites a pod's ADD record as whoever holds a hostPath to the state dir could (whole, by rename: the agent never reads half). */
export function forgeRecord(pod: string, change: Partial<PodRecord>): void {
  const { file, record } = recordFileOf(pod);
  writeFileSync(`${file}.forged`, JSON.stringify({ ...record, ...change }));
  renameSync(`${file}.forged`, file);
}

/** Removes a pod's ADD record, as whoever holds a hostPath to the state dir could. */
export const removeRecord = (pod: string): void => rmSync(recordFileOf(pod).file);

/** A command run in a netns, entered from the node, as a pod's own NET_ADMIN would run it there. */
const inNetns = (netns: string, ...argv: string[]) => execa("nsenter", [`--net=${netns}`, "--", ...argv]);

/** A command run in the netns a pod's ADD record names. */
export const inPodNetns = (pod: string, ...argv: string[]) => inNetns(recordOf(pod).netns, ...argv);

/** Empties the pod's outbound redirect chain by hand, in whichever backend holds it. */
export function flushOutbound(pod: string) {
  const { backend } = recordOf(pod);
  if (backend === "nftables") return inPodNetns(pod, "nft", "flush", "chain", "ip", "meshcni", "PROXY_INIT_OUTPUT");
  const iptables = backend === "legacy" ? "iptables-legacy" : backend === "plain" ? "iptables" : "iptables-nft";
  return inPodNetns(pod, iptables, "-t", "nat", "-F", "PROXY_INIT_OUTPUT");
}

/** The nat rules in a netns, as the backend lists them (what a write there would change): nftables's whole ruleset. */
export async function natRulesIn({ netns, backend }: Pick<PodRecord, "netns" | "backend">): Promise<string> {
  if (backend === "nftables") return (await inNetns(netns, "nft", "list", "ruleset")).stdout;
  const save = backend === "legacy" ? "iptables-legacy-save" : backend === "plain" ? "iptables-save" : "iptables-nft-save";
  // Counters and the header's time change by themselves.
  return (await inNetns(netns, save, "-t", "nat")).stdout.replace(/^#.*$/gm, "").replace(/\[\d+:\d+\]/g, "");
}

/** The netns in the node's netns dir holding `ip` (a pod without an ADD record of meshcni's: a plain one), from its addresses. */
export async function netnsHolding(ip: string): Promise<string> {
  for (const name of readdirSync(paths.netnsDir)) {
    const netns = join(paths.netnsDir, name);
    const { stdout } = await inNetns(netns, "ip", "-o", "addr", "show").catch(() => ({ stdout: "" }));
    if (stdout.includes(` ${ip}/`)) return netns;
  }
  throw new Error(`no netns in ${paths.netnsDir} holds ${ip}`);
}
