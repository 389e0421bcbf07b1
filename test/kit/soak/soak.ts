// The soak: the real cluster (test/kit/cluster) with meshcni deployed, pods created and
// deleted all along, and faults drawn from a seed one at a time; the invariants checked all
// the while (test/kit/soak/check.ts) and after each fault's recovery; a report at the end.

import { join } from "node:path";
import { agentProcess } from "../cluster/agent-process.js";
import { agentUser, auditEvents } from "../cluster/audit.js";
import type { RealCluster } from "../cluster/cluster.js";
import { auditNode, leftOnNode, Meshcni, withPluginTokenSeconds } from "../cluster/meshcni.js";
import { asList, plainPod } from "../cluster/workloads.js";
import { sleep } from "../common.js";
import { openFds, rssMb } from "../proc.js";
import { AuditAgreement, notRecovered, RedirectWatch, soakSandboxes } from "./check.js";
import {
  between,
  drawSoak,
  type FaultKind,
  type Recovery,
  type RecoverySummary,
  type SoakDraw,
  seededRandom,
  summarizeRecoveries,
} from "./draw.js";
import { faults } from "./faults.js";
import { RepairWatch } from "./repairs.js";
import { keepLogs, logMarks } from "./slow-logs.js";
import { SoakWorkload } from "./workload.js";

export interface SoakOptions {
  draw: SoakDraw;
  /** Stops drawing faults past this many minutes (the report says how many ran). */
  minutes?: number;
  log(line: string): void;
  /** Where the cluster's logs of a slow recovery are kept (the cluster's own go with it). */
  logsDir: string;
}

export interface Violation {
  /** The fault under way (its index in the seed's draw; -1 before the first). */
  index: number;
  kind: FaultKind | "setup" | "end";
  what: string;
}

export interface SoakReport {
  draw: SoakDraw;
  drawn: FaultKind[];
  run: Array<{ index: number; kind: FaultKind; did: string; recoveredMs?: number }>;
  recoveries: RecoverySummary[];
  violations: Violation[];
  /** The agent's process after each fault's recovery. */
  agent: Array<{ index: number; pid: number; rssMb: number; fds: number }>;
  agentRequestsPerMinuteMax: number;
  workload: { created: number; deleted: number; refused: number };
  checks: { passes: number; connections: number; audits: number; repairs: number };
}

const recoveryTimeoutMs = 300_000;
/** A recovery slower than this keeps the cluster's logs of it. */
const keepLogsAfterMs = 60_000;
const pluginTokenSeconds = 600;
/** An agent asking more than this in any minute is in a loop. */
const requestsPerMinuteBound = 600;

/** Waits for the node to recover from a fault: how long it took, or what was still missing at the timeout. */
async function recovery(cluster: RealCluster): Promise<{ ms: number; waitedOn: string[] } | { left: string[] }> {
  const started = performance.now();
  let waitedOn: string[] = [];
  for (;;) {
    // A pass takes seconds (a connection to each pod): recovered from the start of the pass that found it so.
    const passStarted = performance.now();
    const left = await notRecovered(cluster);
    if (left.length === 0) return { ms: passStarted - started, waitedOn };
    waitedOn = left;
    if (performance.now() - started > recoveryTimeoutMs) return { left };
    await sleep(1000);
  }
}

/** The agent's process now (its pod's container, as the runtime has it), its memory and descriptors; undefined between two of its lives. */
async function agentSample(cluster: RealCluster, index: number) {
  const pid = await agentProcess(cluster).catch(() => undefined);
  return pid === undefined ? undefined : { index, pid, rssMb: Math.round(rssMb(pid) * 10) / 10, fds: openFds(pid) };
}

/** A process that lived through several faults must not have grown: memory by 40 MB, descriptors by 64. */
function growth(samples: SoakReport["agent"]): string[] {
  const byPid = new Map<number, SoakReport["agent"]>();
  for (const sample of samples) byPid.set(sample.pid, [...(byPid.get(sample.pid) ?? []), sample]);
  return [...byPid.values()].flatMap((lives) => {
    if (lives.length < 3) return [];
    const [first, last] = [lives[0]!, lives.at(-1)!];
    const grew = last.rssMb - Math.min(...lives.map((sample) => sample.rssMb)) > 40 || last.fds - first.fds > 64;
    return grew ? [`the agent (pid ${first.pid}) grew from ${first.rssMb} MB, ${first.fds} fds to ${last.rssMb} MB, ${last.fds} fds`] : [];
  });
}

/** The most requests the agent made in any minute since `since` (ISO time), by the audit log. */
function requestsPerMinuteMax(since: string): number {
  const minutes = new Map<string, number>();
  for (const event of auditEvents(agentUser()).filter((candidate) => candidate.requestReceivedTimestamp >= since)) {
    const minute = event.requestReceivedTimestamp.slice(0, 16);
    minutes.set(minute, (minutes.get(minute) ?? 0) + 1);
  }
  return Math.max(0, ...minutes.values());
}

/** Runs the soak on `cluster` (up, meshcni not yet deployed); the cluster is left up. */
export async function soak(cluster: RealCluster, options: SoakOptions): Promise<SoakReport> {
  // Faults and their parameters from the seed, the load from its own generator: a replay draws the same faults.
  const { drawn, random } = drawSoak(options.draw);
  const seed = options.draw.seed;
  const report: SoakReport = {
    draw: options.draw,
    drawn,
    run: [],
    recoveries: [],
    violations: [],
    agent: [],
    agentRequestsPerMinuteMax: 0,
    workload: { created: 0, deleted: 0, refused: 0 },
    checks: { passes: 0, connections: 0, audits: 0, repairs: 0 },
  };
  let under: { index: number; kind: Violation["kind"] } = { index: -1, kind: "setup" };
  const violation = (what: string) => {
    options.log(`VIOLATION (fault ${under.index}, ${under.kind}): ${what}`);
    report.violations.push({ ...under, what });
  };
  const since = new Date().toISOString();
  // The plugin's token lives the API's shortest (10 minutes), so a fault can outlive it.
  await new Meshcni(cluster).deploy([], withPluginTokenSeconds(pluginTokenSeconds));
  await cluster.kubectl(["apply", "-f", "-"], asList(plainPod("client")));
  await cluster.kubectl(["wait", "--for=condition=Ready", "pod/client", "--timeout=90s"]);
  const workload = new SoakWorkload(cluster, seededRandom(seed + 1));
  await workload.prepare();
  workload.start();
  const watch = new RedirectWatch(cluster, violation);
  const agreement = new AuditAgreement();
  const repairs = new RepairWatch(cluster);
  let watching = true;
  const checking = (async () => {
    while (watching) {
      await watch.check();
      // Every fifth pass, the operator's view beside it: what meshcni audit says of each pod just connected to.
      const audited = watch.checks % 5 === 0 ? await auditNode() : undefined;
      for (const what of audited ? agreement.compare(audited, watch.answered) : []) violation(what);
      await sleep(2000);
    }
  })();
  const deadline = options.minutes === undefined ? Number.POSITIVE_INFINITY : performance.now() + options.minutes * 60_000;
  const recoveries: Recovery[] = [];
  for (const [index, kind] of drawn.entries()) {
    if (performance.now() > deadline) break;
    under = { index, kind };
    const marks = logMarks();
    const did = await faults[kind]({ cluster, random }).catch((error: Error) => {
      violation(`the fault itself failed: ${error.message.split("\n")[0]}`);
      return "failed";
    });
    const recovered = await recovery(cluster);
    const entry = { index, kind, did, ...("ms" in recovered ? { recoveredMs: Math.round(recovered.ms) } : {}) };
    report.run.push(entry);
    // What a slow recovery waited on last: what to look into.
    const slow = "ms" in recovered && recovered.ms > 30_000 ? ` (last waiting on: ${recovered.waitedOn.join("; ")})` : "";
    options.log(`[${index}] ${did}: ${"ms" in recovered ? `recovered in ${(recovered.ms / 1000).toFixed(1)} s${slow}` : "NOT recovered"}`);
    if (!("ms" in recovered) || recovered.ms > keepLogsAfterMs) {
      const kept = join(options.logsDir, `soak-${seed}-fault-${index}`);
      await keepLogs(cluster, marks, kept).then(
        () => options.log(`[${index}] the cluster's logs since the fault kept in ${kept}`),
        (error: Error) => options.log(`[${index}] could not keep the cluster's logs in ${kept}: ${error.message}`),
      );
    }
    if ("ms" in recovered) recoveries.push({ kind, ms: recovered.ms });
    else violation(`not recovered within ${recoveryTimeoutMs / 1000} s: ${recovered.left.join("; ")}`);
    for (const what of await repairs.check(watch.redirected, () => soakSandboxes(cluster), since)) violation(what);
    const sample = await agentSample(cluster, index);
    if (sample) report.agent.push(sample);
    await sleep(between(random, 2000, 5000));
  }
  under = { index: report.run.length, kind: "end" };
  await workload.stop();
  watching = false;
  await checking;
  await watch.check();
  for (const what of await repairs.check(watch.redirected, () => soakSandboxes(cluster), since)) violation(what);
  for (const grown of growth(report.agent)) violation(grown);
  report.agentRequestsPerMinuteMax = requestsPerMinuteMax(since);
  if (report.agentRequestsPerMinuteMax > requestsPerMinuteBound) {
    violation(`the agent made ${report.agentRequestsPerMinuteMax} API requests in one minute (bound ${requestsPerMinuteBound})`);
  }
  await cluster.kubectl(["-n", "meshcni", "delete", "daemonset", "meshcni", "--wait"]);
  // The uninstall is done when the agent's pod is: after an API server restart the garbage collector took 14 to 100 s to delete it here.
  await cluster
    .kubectl(["-n", "meshcni", "wait", "--for=delete", "pod", "-l", "app.kubernetes.io/name=meshcni", "--timeout=240s"])
    .catch((error: Error) => violation(`the agent's pod not gone 240 s after its DaemonSet was deleted: ${error.message.split("\n")[0]}`));
  for (const left of await leftOnNode(cluster)) violation(`left on the node after the uninstall: ${left}`);
  await workload.remove();
  report.recoveries = summarizeRecoveries(recoveries);
  report.workload = { created: workload.created, deleted: workload.deleted, refused: workload.refused };
  report.checks = { passes: watch.checks, connections: watch.connections, audits: agreement.audits, repairs: repairs.repairs };
  return report;
}
