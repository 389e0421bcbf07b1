// The node agents side by side on the real node, both running at once: meshcni's and Istio's
// (install-cni), idle and under churn of both kinds of pods, each one's API requests per
// minute (the API server's audit log), CPU (its process and the children it waited for, from
// /proc; apart, its children still running: meshcni's writers, which do what Istio's plugin
// does in its own process) and resident memory (sampled every second).
import type { CoreV1Api, V1Pod } from "@kubernetes/client-node";
import { execa } from "execa";
import { type AuditEvent, auditEvents, describeRequest } from "../test/kit/cluster/audit.js";
import { sleep } from "../test/kit/common.js";
import { cpuTicks, processesOf, rssMb, withDescendants } from "../test/kit/proc.js";

export interface NodeAgent {
  name: string;
  /** Its process: argv[0]'s base name, and an argument only it runs with. */
  command: string;
  argument: string;
  /** Which of the audit log's requests are its own. */
  requests: (event: AuditEvent) => boolean;
}

export interface AgentUsage {
  requestsPerMinute: number;
  /** Per minute, by kind ("get pods 404"). */
  byKind: Record<string, number>;
  /** CPU over the window, in thousandths of a core (its process and the children it waited for). */
  cpuMillicores: number;
  /** CPU over the window of its descendants still running at its end (meshcni's writers), not in cpuMillicores. */
  runningChildrenMillicores: number;
  rssMbMean: number;
  rssMbMax: number;
}

/** The CPU ticks so far of each process below `pid` (not itself), by pid. */
function childTicks(pid: number): Map<number, number> {
  const ticks = new Map<number, number>();
  for (const child of withDescendants([pid]).filter((found) => found !== pid)) {
    try {
      ticks.set(child, cpuTicks(child));
    } catch {
      // ended while read
    }
  }
  return ticks;
}

/** The one running process of the agent. */
function pidOf(agent: NodeAgent): number {
  const matches = processesOf(agent.command, agent.argument);
  if (matches.length !== 1) throw new Error(`${agent.name}: ${matches.length} processes of ${agent.command} ${agent.argument}`);
  return matches[0]!;
}

const round1 = (value: number) => Math.round(value * 10) / 10;

/** Each agent's usage over `seconds` while `load` runs (if any). */
export async function agentUsage(
  agents: NodeAgent[],
  seconds: number,
  load?: (signal: AbortSignal) => Promise<void>,
): Promise<Record<string, AgentUsage>> {
  const ticksPerSecond = Number((await execa("getconf", ["CLK_TCK"])).stdout);
  const since = new Date().toISOString();
  const pids = agents.map(pidOf);
  const ticksBefore = pids.map(cpuTicks);
  const childrenBefore = pids.map(childTicks);
  const rss: number[][] = pids.map(() => []);
  const stop = new AbortController();
  const running = load?.(stop.signal);
  const started = performance.now();
  for (let second = 0; second < seconds; second++) {
    for (const [i, pid] of pids.entries()) rss[i]!.push(rssMb(pid));
    await sleep(Math.max(0, started + (second + 1) * 1000 - performance.now()));
  }
  const ticksAfter = pids.map(cpuTicks);
  const childrenAfter = pids.map(childTicks);
  const elapsed = (performance.now() - started) / 1000;
  stop.abort();
  await running;
  const all = auditEvents();
  // Each agent listed and watched when it started: a filter that matches nothing is wrong, not an idle agent.
  for (const agent of agents) if (!all.some(agent.requests)) throw new Error(`no request of ${agent.name} in the audit log`);
  const events = all.filter((event) => event.requestReceivedTimestamp >= since);
  return Object.fromEntries(
    agents.map((agent, i) => {
      if (pidOf(agent) !== pids[i]) throw new Error(`${agent.name} restarted while measured`);
      const own = events.filter(agent.requests);
      const byKind: Record<string, number> = {};
      for (const event of own) byKind[describeRequest(event)] = round1((byKind[describeRequest(event)] ?? 0) + 60 / seconds);
      const usage: AgentUsage = {
        requestsPerMinute: Math.round((own.length * 60) / seconds),
        byKind,
        cpuMillicores: Math.round(((ticksAfter[i]! - ticksBefore[i]!) / ticksPerSecond / elapsed) * 1000),
        runningChildrenMillicores: Math.round(
          ([...childrenAfter[i]!].reduce((sum, [child, ticks]) => sum + ticks - (childrenBefore[i]!.get(child) ?? 0), 0) /
            ticksPerSecond /
            elapsed) *
            1000,
        ),
        rssMbMean: round1(rss[i]!.reduce((sum, value) => sum + value, 0) / rss[i]!.length),
        rssMbMax: round1(Math.max(...rss[i]!)),
      };
      return [agent.name, usage];
    }),
  );
}

/**
 * 10 pods/s: each second 10 pods created (made by `pod`, given the pod's index in its
 * second), and those created `lifetimeSeconds` before deleted; all deleted when it stops.
 */
export async function churn(
  api: CoreV1Api,
  namespace: string,
  pod: (name: string, index: number) => V1Pod,
  lifetimeSeconds: number,
  signal: AbortSignal,
): Promise<void> {
  for (let round = 0; !signal.aborted; round++) {
    const started = performance.now();
    const names = (at: number) => Array.from({ length: 10 }, (_, i) => `churn-${at}-${i}`);
    await Promise.all(names(round).map((name, i) => api.createNamespacedPod({ namespace, body: pod(name, i) })));
    if (round >= lifetimeSeconds) {
      await Promise.all(names(round - lifetimeSeconds).map((name) => api.deleteNamespacedPod({ namespace, name, gracePeriodSeconds: 0 })));
    }
    await sleep(Math.max(0, 1000 - (performance.now() - started)));
  }
  await api.deleteCollectionNamespacedPod({ namespace, gracePeriodSeconds: 0 });
}

/** One line per agent and window: requests per minute, CPU, memory. */
export function printAgentUsage(window: string, usage: Record<string, AgentUsage>): void {
  for (const [name, u] of Object.entries(usage)) {
    console.log(
      `${`${name}, ${window}`.padEnd(44)}${String(u.requestsPerMinute).padStart(8)} req/min${String(u.cpuMillicores).padStart(7)} mCPU` +
        `${u.rssMbMean.toFixed(1).padStart(8)} MB RSS mean${u.rssMbMax.toFixed(1).padStart(8)} max` +
        (u.runningChildrenMillicores > 0 ? `  (its running children: ${u.runningChildrenMillicores} mCPU more)` : ""),
    );
  }
}
