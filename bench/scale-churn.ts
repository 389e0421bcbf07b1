// `npm run bench scale`'s churns: the changes made through the API while a window is read.

import { CoreV1Api, DiscoveryV1Api, type KubeConfig } from "@kubernetes/client-node";
import { sleep } from "../test/kit/common.js";
import { simulatedPod } from "./scale-nodes.js";
import type { Mode } from "./scale-report.js";

/**
 * A churn, as how often each change comes, in ticks of `tickMs` on the wall clock (however
 * long the calls take, so a busy host does not thin it): a pod of a simulated node replaced
 * (what an agent watches), an endpoint of a Service moved (what kube-proxy watches), a
 * namespace made and the last one removed (what neither needs to see).
 */
export interface ChurnMix {
  tickMs: number;
  podEvery: number;
  sliceEvery: number;
  namespaceEvery: number;
}

export const mixes: Record<Exclude<Mode, "idle">, ChurnMix> = {
  // The bench's first mix: 2 pods/s, an EndpointSlice change every 2 s, a namespace every 5 s.
  churn: { tickMs: 500, podEvery: 1, sliceEvery: 4, namespaceEvery: 10 },
  // Closer to clusters': 4 pods/s, 4 EndpointSlice changes a second, a namespace a minute.
  podChurn: { tickMs: 250, podEvery: 1, sliceEvery: 1, namespaceEvery: 240 },
};

/** Resolves with the churn's calls the API server answered. */
let ticks = 0;
let lastNamespace: string | undefined;
export async function churn(config: KubeConfig, count: number, mix: ChurnMix, signal: AbortSignal): Promise<number> {
  const [core, discovery] = [config.makeApiClient(CoreV1Api), config.makeApiClient(DiscoveryV1Api)];
  const calls: Array<Promise<boolean>> = [];
  const call = (made: Promise<unknown>) =>
    calls.push(
      made.then(
        () => true,
        () => false,
      ),
    );
  const started = performance.now();
  // Ticks go on from window to window: no name is made twice, and the last namespace made is the one removed.
  for (let tick = 0; !signal.aborted; tick++, ticks++) {
    if (tick % mix.podEvery === 0) {
      const pod = simulatedPod(ticks % count, 1000 + ticks);
      call(core.createNamespacedPod({ namespace: pod.metadata!.namespace!, body: pod }));
      const old = simulatedPod((ticks - 10 + count * 10) % count, 1000 + ticks - 10);
      if (ticks >= 10)
        call(core.deleteNamespacedPod({ name: old.metadata!.name!, namespace: old.metadata!.namespace!, gracePeriodSeconds: 0 }));
    }
    if (tick % mix.sliceEvery === 0)
      call(discovery.replaceNamespacedEndpointSlice({ name: "scale", namespace: "default", body: endpointSlice(ticks) }));
    if (tick % mix.namespaceEvery === 0) {
      const made = `scale-churn-${ticks}`;
      call(core.createNamespace({ body: { metadata: { name: made } } }));
      if (lastNamespace) call(core.deleteNamespace({ name: lastNamespace }));
      lastNamespace = made;
    }
    await sleep(Math.max(0, started + (tick + 1) * mix.tickMs - performance.now()));
  }
  return (await Promise.all(calls)).filter(Boolean).length;
}

/** A Service's endpoints, one of them moved each time (kube-proxy's churn). */
export const endpointSlice = (version: number) => ({
  apiVersion: "discovery.k8s.io/v1",
  kind: "EndpointSlice",
  metadata: { name: "scale", namespace: "default", labels: { "kubernetes.io/service-name": "scale" } },
  addressType: "IPv4",
  ports: [{ name: "", port: 8080, protocol: "TCP" }],
  endpoints: Array.from({ length: 20 }, (_, index) => ({
    addresses: [`10.249.${index}.${index === 0 ? version % 250 : 1}`],
    conditions: { ready: true },
  })),
});
