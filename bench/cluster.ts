// The pod start a user sees, on the real single-node cluster (test/kit/cluster): pod
// creation to its IP (the sandbox's network set up, the CNI chain run) and to Ready, for
// 40 meshed pods started one after another, with the primary alone, with the Go
// linkerd-cni pattern chained after it, with Istio's CNI plugin (sidecar mode, its own pods),
// and with meshcni; kubelet's own mean RunPodSandbox for each, and each chained plugin's API
// requests per pod start; then the agent's API requests per minute, idle and under 10 pods/s
// of churn, as the API server's audit log counts them.
import { writeFileSync } from "node:fs";
import { CoreV1Api, KubeConfig, type V1Pod, Watch } from "@kubernetes/client-node";
import { agentUser, auditEvents, describeRequest } from "../test/kit/cluster/audit.js";
import { RealCluster } from "../test/kit/cluster/cluster.js";
import { hostPort } from "../test/kit/cluster/families.js";
import { nodeName, paths } from "../test/kit/cluster/layout.js";
import { Meshcni } from "../test/kit/cluster/meshcni.js";
import { chainedTypes, primaryConflist, primaryConflistPath } from "../test/kit/cluster/node.js";
import { asList, meshedTemplate, plainPod } from "../test/kit/cluster/workloads.js";
import { sleep, until } from "../test/kit/common.js";
import { chainIstioCni, chainLinkerdPattern, istioInbound, istioPod, serviceAccountUser } from "./cluster-peers.js";
import { printTable, type Summary, saveResults, summarize } from "./stats.js";

const pods = 40;
const namespace = "bench";
/** Pods live this long under churn: long enough for most to start on this node before they go. */
const churnLifetimeSeconds = 10;

/** A meshed pod named `name`, as Linkerd's injector writes one (the proxy a native sidecar). */
function meshedPod(name: string): V1Pod {
  const template = meshedTemplate("bench", { sidecar: "native" }) as { metadata: object; spec: object };
  return { apiVersion: "v1", kind: "Pod", metadata: { ...template.metadata, name }, spec: template.spec } as V1Pod;
}

/** kubelet's RunPodSandbox so far (the sandbox and the whole CNI chain's ADD), from its own metrics. */
async function runPodSandboxSoFar(cluster: RealCluster): Promise<{ seconds: number; count: number }> {
  const metrics = await cluster.kubectl(["get", "--raw", `/api/v1/nodes/${nodeName}/proxy/metrics`]);
  const read = (suffix: string) =>
    Number(
      new RegExp(`^kubelet_runtime_operations_duration_seconds_${suffix}\\{operation_type="run_podsandbox"\\} (\\S+)$`, "m").exec(
        metrics,
      )?.[1] ?? 0,
    );
  return { seconds: read("sum"), count: read("count") };
}

interface Times {
  created: number;
  ip?: number | undefined;
  ready?: number | undefined;
}

/** What a round starts, and what is read of it: its pods (meshed as Linkerd's injector writes them unless said), the chained plugin's ServiceAccount. */
interface Round {
  pod?: (name: string) => V1Pod;
  /** Whose API requests are counted per pod start (the audit log's user). */
  user?: string;
  /** Run on the round's last pod, before the round's pods go: proves the chain did its work. */
  check?: (name: string) => Promise<void>;
}

/**
 * Creates meshed pods one at a time, each once the last is Ready: how long each took to
 * show its IP and to be Ready in the API (a watch), kubelet's mean RunPodSandbox, and the
 * chained plugin's API requests per pod start.
 */
async function podStarts(cluster: RealCluster, api: CoreV1Api, watch: Watch, label: string, round: Round = {}): Promise<Summary[]> {
  const since = new Date().toISOString();
  const seen = new Map<string, Times>();
  const stream = await watch.watch(
    `/api/v1/namespaces/${namespace}/pods`,
    {},
    (_type, pod: V1Pod) => {
      const times = seen.get(pod.metadata?.name ?? "");
      if (!times) return;
      times.ip ??= pod.status?.podIP ? performance.now() : undefined;
      const ready = pod.status?.conditions?.some((condition) => condition.type === "Ready" && condition.status === "True");
      times.ready ??= ready ? performance.now() : undefined;
    },
    () => undefined,
  );
  const sandboxesBefore = await runPodSandboxSoFar(cluster);
  for (let i = 0; i < pods; i++) {
    const times: Times = { created: performance.now() };
    const name = `${label.replace(/[^a-z]+/g, "-").replace(/^-|-$/g, "")}-${i}`;
    seen.set(name, times);
    await api.createNamespacedPod({ namespace, body: (round.pod ?? meshedPod)(name) });
    await until(() => times.ready !== undefined, 60_000, 5);
  }
  const sandboxesAfter = await runPodSandboxSoFar(cluster);
  await round.check?.([...seen.keys()].at(-1)!);
  if (round.user) {
    const requests = auditEvents(round.user).filter((event) => event.requestReceivedTimestamp >= since);
    console.log(`${label}: ${(requests.length / pods).toFixed(2)} API requests per pod start (${round.user})`);
  }
  stream.abort();
  await api.deleteCollectionNamespacedPod({ namespace, gracePeriodSeconds: 0 });
  await until(async () => (await api.listNamespacedPod({ namespace })).items.length === 0, 120_000, 250);
  const all = [...seen.values()];
  const sandboxMs = ((sandboxesAfter.seconds - sandboxesBefore.seconds) * 1000) / (sandboxesAfter.count - sandboxesBefore.count);
  return [
    summarize(
      `${label}: to its IP`,
      all.map((t) => t.ip! - t.created),
    ),
    summarize(
      `${label}: to Ready`,
      all.map((t) => t.ready! - t.created),
    ),
    summarize(`${label}: RunPodSandbox (kubelet, mean)`, [sandboxMs]),
  ];
}

/** The agent's requests over `seconds` while `load` runs (if any): per minute, in all and by kind ("get pods 404"). */
async function agentRequestsPerMinute(seconds: number, load?: (signal: AbortSignal) => Promise<void>) {
  const since = new Date().toISOString();
  const stop = new AbortController();
  const running = load?.(stop.signal);
  await sleep(seconds * 1000);
  stop.abort();
  await running;
  const requests = auditEvents(agentUser()).filter((event) => event.requestReceivedTimestamp >= since);
  const byKind: Record<string, number> = {};
  for (const request of requests) byKind[describeRequest(request)] = (byKind[describeRequest(request)] ?? 0) + 60 / seconds;
  return { total: Math.round((requests.length * 60) / seconds), byKind };
}

/** 10 pods/s: each second 10 meshed pods created, and those created churnLifetimeSeconds before deleted. */
async function churn(api: CoreV1Api, signal: AbortSignal): Promise<void> {
  for (let round = 0; !signal.aborted; round++) {
    const started = performance.now();
    const names = (at: number) => Array.from({ length: 10 }, (_, i) => `churn-${at}-${i}`);
    await Promise.all(names(round).map((name) => api.createNamespacedPod({ namespace, body: meshedPod(name) })));
    if (round >= churnLifetimeSeconds) {
      await Promise.all(
        names(round - churnLifetimeSeconds).map((name) => api.deleteNamespacedPod({ namespace, name, gracePeriodSeconds: 0 })),
      );
    }
    await sleep(Math.max(0, 1000 - (performance.now() - started)));
  }
  await api.deleteCollectionNamespacedPod({ namespace, gracePeriodSeconds: 0 });
}

export async function benchCluster(): Promise<void> {
  // Istio's CNI plugin is built for this bench alone (components.sh).
  process.env.MESHCNI_ISTIO = "1";
  const cluster = new RealCluster();
  await cluster.up();
  try {
    const config = new KubeConfig();
    config.loadFromFile(paths.adminKubeconfig);
    const api = config.makeApiClient(CoreV1Api);
    const watch = new Watch(config);
    // The primary alone and the Go pattern run without meshcni's agent to lift its startup taint.
    await cluster.kubectl(["taint", "node", "--all", "meshcni.io/not-ready-"]);
    await cluster.kubectl(["create", "namespace", namespace]);
    await cluster.kubectl(["apply", "-f", "-"], asList(plainPod("client")));
    await cluster.kubectl(["wait", "--for=condition=Ready", "pod/client", "--timeout=90s"]);
    const rows: Summary[] = [];
    rows.push(...(await podStarts(cluster, api, watch, "primary alone")));
    await chainLinkerdPattern(cluster);
    rows.push(...(await podStarts(cluster, api, watch, "Go linkerd-cni pattern chained", { user: serviceAccountUser("linkerd-cni") })));
    await chainIstioCni(cluster);
    const istio: Round = {
      pod: (name) => istioPod(name, namespace),
      user: serviceAccountUser("istio-cni"),
      // Through Istio's redirect to its proxy's 15006, with real TCP from an unmeshed pod.
      check: async (name) => {
        const ip = (await api.readNamespacedPod({ namespace, name })).status!.podIP!;
        const answer = await cluster.connect("client", hostPort(ip, 8080));
        if (!answer.startsWith(istioInbound)) throw new Error(`istio-cni did not redirect ${name}: ${answer}`);
      },
    };
    rows.push(...(await podStarts(cluster, api, watch, "istio-cni chained (sidecar mode)", istio)));
    writeFileSync(primaryConflistPath, JSON.stringify(primaryConflist()));
    await new Meshcni(cluster).deploy();
    rows.push(...(await podStarts(cluster, api, watch, "meshcni chained (agent)", { user: agentUser() })));
    // The primary alone again, once the first round's warm-up is past: the order of the rounds is not what differs.
    await cluster.kubectl(["-n", "meshcni", "delete", "daemonset", "meshcni", "--wait"]);
    await until(() => !chainedTypes().includes("meshcni"), 60_000, 250);
    rows.push(...(await podStarts(cluster, api, watch, "primary alone, again")));
    await new Meshcni(cluster).deploy();
    printTable(`Pod start on the real node (${pods} meshed pods, one after another)`, rows);
    // Idle once the sweeps have seen the last round's pods go (the condition's counts settle).
    await sleep(70_000);
    const idle = await agentRequestsPerMinute(180);
    const churning = await agentRequestsPerMinute(60, (signal) => churn(api, signal));
    console.log(
      `\nmeshcni's agent, API requests per minute (the API server's audit log): idle ${idle.total}; under 10 pods/s of churn ${churning.total}`,
    );
    for (const [kind, perMinute] of Object.entries(churning.byKind)) console.log(`  under churn: ${kind}: ${Math.round(perMinute)}/min`);
    saveResults("cluster", { podStarts: rows, agentRequestsPerMinute: { idle, churn10PerSecond: churning } });
  } finally {
    await cluster.down();
  }
}
