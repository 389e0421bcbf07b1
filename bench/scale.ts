// `npm run bench scale` (issue 43): what one node's meshcni agent costs the real API server,
// beside what kube-proxy costs it for the same node. For N = 10, 50 and 100 simulated nodes
// (scale-nodes.ts: Node objects, 30 pods bound to each), the API server is read with none of
// the per-node components running (the baseline), with N meshcni agents, then with N
// kube-proxies (scale-components.ts), each idle and under the same churn; the report
// (scale-report.ts) gives the cost per node, its slope over N and the projection to 5,000.

import { readFileSync, writeFileSync } from "node:fs";
import { CoreV1Api, DiscoveryV1Api, KubeConfig } from "@kubernetes/client-node";
import { execa } from "execa";
import { RealCluster } from "../test/kit/cluster/cluster.js";
import { paths } from "../test/kit/cluster/layout.js";
import { Meshcni } from "../test/kit/cluster/meshcni.js";
import { runningPid } from "../test/kit/cluster/processes.js";
import { sleep } from "../test/kit/common.js";
import { cpuTicks, rssMb } from "../test/kit/proc.js";
import { apiserverLiveHeapMb, apiserverRuntime, restartApiserver } from "./apiserver.js";
import { churn, endpointSlice, mixes } from "./scale-churn.js";
import { componentDaemons, startComponents, stopComponents } from "./scale-components.js";
import { SimulatedNodes } from "./scale-nodes.js";
import { type Component, components, formatScale, type Mode, type Reading, type ScaleRun } from "./scale-report.js";
import { saveResults } from "./stats.js";

const nodeCounts = [10, 50, 100];
const podsPerNode = 30;
/** After the components start (their lists and watches made), before the idle window. */
const settleSeconds = 30;
const windowSeconds = 60;

const mean = (values: number[]) => (values.length === 0 ? 0 : values.reduce((sum, value) => sum + value, 0) / values.length);

/** The API server's own counters: requests but WATCHes so far, WATCHes open now, watch events sent so far. */
async function apiserverCounters(
  cluster: RealCluster,
): Promise<{ requests: number; watches: number; watchEvents: number; watchEventsByResource: Record<string, number> }> {
  const text = await cluster.kubectl(["get", "--raw", "/metrics"]);
  const samples = (name: string) =>
    [...text.matchAll(new RegExp(`^${name}(?:\\{([^}]*)\\})? (\\S+)$`, "gm"))].map(([, labels = "", value]) => ({
      labels,
      value: Number(value),
    }));
  const sum = (name: string, keep: (labels: string) => boolean = () => true) =>
    samples(name)
      .filter(({ labels }) => keep(labels))
      .reduce((total, { value }) => total + value, 0);
  const watchEventsByResource: Record<string, number> = {};
  for (const { labels, value } of samples("apiserver_watch_events_total")) {
    const resource = /resource="([^"]*)"/.exec(labels)?.[1] ?? "?";
    watchEventsByResource[resource] = (watchEventsByResource[resource] ?? 0) + value;
  }
  return {
    requests: sum("apiserver_request_total", (labels) => !labels.includes('verb="WATCH"')),
    watches: sum("apiserver_longrunning_requests", (labels) => labels.includes('verb="WATCH"')),
    watchEvents: Object.values(watchEventsByResource).reduce((total, value) => total + value, 0),
    watchEventsByResource,
  };
}

/** The host's CPU ticks, all and idle (with iowait), from /proc/stat: how much of the machine a window left unused. */
function hostTicks(): { total: number; idle: number } {
  const fields = readFileSync("/proc/stat", "utf8").split("\n")[0]!.split(/\s+/).slice(1).map(Number);
  return { total: fields.reduce((sum, value) => sum + value, 0), idle: (fields[3] ?? 0) + (fields[4] ?? 0) };
}

/** The API server over one window while `load` runs (if any), and the components' own memory (their pids, if any). */
async function measure(cluster: RealCluster, load?: (signal: AbortSignal) => Promise<number>, own?: () => number[]): Promise<Reading> {
  const pid = runningPid("kube-apiserver");
  if (!pid) throw new Error("kube-apiserver is not running");
  const ticksPerSecond = Number((await execa("getconf", ["CLK_TCK"])).stdout);
  const [before, ticksBefore, hostBefore, started] = [await apiserverCounters(cluster), cpuTicks(pid), hostTicks(), performance.now()];
  const [rss, heap, ownRss]: [number[], number[], number[]] = [[], [], []];
  const stop = new AbortController();
  const loading = load?.(stop.signal);
  while (performance.now() - started < windowSeconds * 1000) {
    rss.push(rssMb(pid));
    heap.push((await apiserverRuntime(cluster)).heapMb);
    if (own) ownRss.push(mean(own().map(rssMb)));
    await sleep(2000);
  }
  stop.abort();
  const churnCalls = await loading;
  const [after, hostAfter, seconds] = [await apiserverCounters(cluster), hostTicks(), (performance.now() - started) / 1000];
  // After the CPU is read: the forced collection is the reading's own cost.
  const millicores = ((cpuTicks(pid) - ticksBefore) / ticksPerSecond / seconds) * 1000;
  return {
    millicores,
    rssMb: mean(rss),
    heapMb: mean(heap),
    liveHeapMb: await apiserverLiveHeapMb(cluster),
    watches: after.watches,
    requestsPerMinute: (after.requests - before.requests) / (seconds / 60),
    watchEventsPerSecond: (after.watchEvents - before.watchEvents) / seconds,
    watchEventsByResource: Object.fromEntries(
      Object.entries(after.watchEventsByResource).map(([resource, total]) => [
        resource,
        (total - (before.watchEventsByResource[resource] ?? 0)) / seconds,
      ]),
    ),
    ...(own ? { ownRssMb: mean(ownRss) } : {}),
    hostIdle: (hostAfter.idle - hostBefore.idle) / Math.max(1, hostAfter.total - hostBefore.total),
    ...(churnCalls === undefined ? {} : { churnCalls }),
  };
}

/**
 * The watch events one change to meshcni's DaemonSet sends: a rollout changes its status a
 * few times per node, so a watch of it by every agent would make a rollout cost N² events;
 * the agents watch their ServiceAccount instead (src/agent/own-install.ts), and this says
 * what is left (the controllers' watches).
 */
async function daemonSetFanout(cluster: RealCluster): Promise<number> {
  const changes = 5;
  const events = async () => (await apiserverCounters(cluster)).watchEventsByResource.daemonsets ?? 0;
  const before = await events();
  for (let change = 0; change < changes; change++) {
    await cluster.kubectl([
      "-n",
      "meshcni",
      "annotate",
      "--overwrite",
      "daemonset/meshcni",
      `meshcni.test/scale-change=${Date.now()}-${change}`,
    ]);
    await sleep(1000);
  }
  await sleep(2000);
  return ((await events()) - before) / changes;
}

/** Every window (idle, then each churn mix), with `component` running for every simulated node (or none: the baseline). */
async function phase(cluster: RealCluster, config: KubeConfig, count: number, component?: Component): Promise<Record<Mode, Reading>> {
  // A fresh API server for each phase: what an earlier phase made it hold must not count in this one.
  await restartApiserver(cluster);
  await sleep(settleSeconds * 1000);
  const own = component ? () => componentDaemons(component).flatMap((name) => runningPid(name) ?? []) : undefined;
  const idle = await measure(cluster, undefined, own);
  const churned = await measure(cluster, (signal) => churn(config, count, mixes.churn, signal), own);
  return { idle, churn: churned, podChurn: await measure(cluster, (signal) => churn(config, count, mixes.podChurn, signal), own) };
}

/** Each agent and each kube-proxy holds an inotify instance (kube-proxy exits without one): 100 of each and the node's own pass Debian's 128. */
const inotifyInstances = "/proc/sys/fs/inotify/max_user_instances";

export async function benchScale(): Promise<void> {
  const inotifyBefore = readFileSync(inotifyInstances, "utf8").trim();
  if (Number(inotifyBefore) < 1024) writeFileSync(inotifyInstances, "1024");
  const cluster = new RealCluster();
  await stopComponents();
  await cluster.up();
  try {
    // node-1's agent, and the DaemonSet whose pod on each simulated node its agent is.
    await new Meshcni(cluster).deploy();
    const config = new KubeConfig();
    config.loadFromFile(paths.adminKubeconfig);
    const service = { metadata: { name: "scale", namespace: "default" }, spec: { ports: [{ port: 8080 }] } };
    await config.makeApiClient(CoreV1Api).createNamespacedService({ namespace: "default", body: service });
    await config.makeApiClient(DiscoveryV1Api).createNamespacedEndpointSlice({ namespace: "default", body: endpointSlice(0) });
    const runs: ScaleRun[] = [];
    for (const count of nodeCounts) {
      const nodes = new SimulatedNodes(config, count, podsPerNode);
      await nodes.create();
      let daemonSetEvents = 0;
      const readings = { baseline: await phase(cluster, config, count) } as ScaleRun["readings"];
      // Every other N the other way round, though each phase starts with a fresh API server.
      for (const component of runs.length % 2 ? [...components].reverse() : components) {
        await startComponents(cluster, component, count);
        readings[component] = await phase(cluster, config, count, component);
        if (component === "meshcni") daemonSetEvents = await daemonSetFanout(cluster);
        await stopComponents();
      }
      await nodes.remove(cluster);
      runs.push({ nodes: count, readings, daemonSetEventsPerChange: daemonSetEvents });
      console.log(`scale: N=${count} measured`);
    }
    console.log(`\n${formatScale(runs)}`);
    console.log(`\nresults: ${saveResults("scale", runs)}`);
  } finally {
    await stopComponents();
    await cluster.down();
    writeFileSync(inotifyInstances, inotifyBefore);
  }
}
