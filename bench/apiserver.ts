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
