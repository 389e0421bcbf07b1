import type { RealCluster } from "../test/kit/cluster/cluster.js";
import { daemonSpec, startDaemon, stopDaemon } from "../test/kit/cluster/processes.js";
import { sleep } from "../test/kit/common.js";

/**
 * Restarts the test cluster's kube-apiserver and waits until it answers: its memory only grows
 * (Go keeps what it once used), so a reading taken after another case's would carry that case's.
 * Its clients (controllers, kubelet, agents) reconnect and list again on their own.
 */
export async function restartApiserver(cluster: RealCluster): Promise<void> {
  await stopDaemon("kube-apiserver");
  startDaemon(daemonSpec("kube-apiserver"));
  for (let tries = 0; tries < 120; tries++) {
    if (
      await cluster.kubectl(["get", "--raw", "/readyz"]).then(
        () => true,
        () => false,
      )
    )
      return;
    await sleep(1000);
  }
  throw new Error("the API server did not come back in 120 s");
}

/** The API server's Go runtime now: its heap in use (MB) and its goroutines, from /metrics. */
export async function apiserverRuntime(cluster: RealCluster): Promise<{ heapMb: number; goroutines: number }> {
  const text = await cluster.kubectl(["get", "--raw", "/metrics"]);
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1]);
  return { heapMb: value("go_memstats_heap_inuse_bytes") / 1e6, goroutines: value("go_goroutines") };
}

/**
 * The API server's live heap, MB: what its Go heap holds right after a collection, forced for
 * the reading (pprof's `gc=1`; its text form ends with runtime.MemStats). The heap in use
 * swings between that and about twice it with the collector's pace; this is what stays.
 */
export async function apiserverLiveHeapMb(cluster: RealCluster): Promise<number> {
  const text = await cluster.kubectl(["get", "--raw", "/debug/pprof/heap?gc=1&debug=1"]);
  const heapAlloc = /^# HeapAlloc = (\d+)$/m.exec(text)?.[1];
  if (heapAlloc === undefined) throw new Error("the API server's heap profile has no HeapAlloc: is --profiling off?");
  return Number(heapAlloc) / 1e6;
}
