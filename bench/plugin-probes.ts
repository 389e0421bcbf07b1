// What the plugin's section reads around its runs: fresh netns, the agent's answer
// histogram, its writers' memory.
import { readFileSync } from "node:fs";
import { execa } from "execa";

let netnsCounter = 0;
const liveNetns = new Set<string>();
export async function freshNetns(): Promise<string> {
  const name = `mcbench-${process.pid}-${netnsCounter++}`;
  await execa("ip", ["netns", "add", name]);
  liveNetns.add(name);
  return name;
}
export const netnsPath = (name: string) => `/var/run/netns/${name}`;
export const dropNetns = async (name: string) => {
  await execa("ip", ["netns", "del", name], { reject: false });
  liveNetns.delete(name);
};

/** Removes every netns freshNetns made that is still there. */
export const dropAllNetns = () => Promise.all([...liveNetns].map(dropNetns));

/** The agent's answer histogram for ADD, as cumulative counts by bucket bound (seconds). */
export function answerBuckets(metrics: string): Map<number, number> {
  const buckets = new Map<number, number>();
  for (const [, le, count] of metrics.matchAll(
    /^meshcni_plugin_answer_duration_seconds_bucket\{le="([^"]+)"[^}]*verb="ADD"[^}]*\} (\d+)$/gm,
  ))
    buckets.set(le === "+Inf" ? Number.POSITIVE_INFINITY : Number(le), Number(count));
  return buckets;
}

/**
 * Between two scrapes: the smallest bucket bounds that hold 99% and all of the answers in
 * between, said as "within N ms", or "past N ms" for answers beyond the largest finite bound.
 */
export function slowestAnswers(before: Map<number, number>, after: Map<number, number>): { p99: string; max: string } {
  const counts = [...after].map(([le, count]) => [le, count - (before.get(le) ?? 0)] as const).sort(([a], [b]) => a - b);
  const total = counts.at(-1)?.[1] ?? 0;
  const largest = counts.filter(([le]) => Number.isFinite(le)).at(-1)?.[0] ?? Number.NaN;
  const within = (share: number) => {
    const bound = counts.find(([, count]) => count >= share * total)?.[0] ?? Number.NaN;
    return Number.isFinite(bound) || Number.isNaN(bound) ? `within ${bound * 1000} ms` : `past ${largest * 1000} ms`;
  };
  return { p99: within(0.99), max: within(1) };
}

/**
 * The agent's writer children (`meshcni apply`): how many, and their memory in MB, the
 * largest peak RSS and the anonymous memory of all (what the node pays for them: their file
 * pages are the binary's, which the agent maps too); NaN when none is running.
 */
export function writersMemoryMb(agentPid: number | undefined): { count: number; peakRss: number; anonymous: number } {
  const mb = (kb: number) => Math.round(kb / 102.4) / 10;
  try {
    const children = readFileSync(`/proc/${agentPid}/task/${agentPid}/children`, "utf8").trim().split(/\s+/);
    const writers = children.filter((pid) => readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").includes("apply"));
    const statuses = writers.map((pid) => readFileSync(`/proc/${pid}/status`, "utf8"));
    const kb = (status: string, field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1]);
    return {
      count: writers.length,
      peakRss: mb(Math.max(...statuses.map((status) => kb(status, "VmHWM")))),
      anonymous: mb(statuses.reduce((sum, status) => sum + kb(status, "RssAnon"), 0)),
    };
  } catch {
    return { count: 0, peakRss: Number.NaN, anonymous: Number.NaN };
  }
}
