// The pod start a user sees, on the real single-node cluster (test/kit/cluster): pod
// creation to its IP (the sandbox's network set up, the CNI chain run) and to Ready, for
// 40 meshed pods started one after another, with the primary alone, with the Go
// linkerd-cni pattern chained after it, with Istio's CNI plugin (sidecar mode, its own pods),
// and with meshcni; kubelet's own mean RunPodSandbox for each, and each chained plugin's API
// requests per pod start; then meshcni's agent and Istio's side by side, idle and under 10
// pods/s of churn: API requests per minute (the API server's audit log), CPU and memory.
import { writeFileSync } from "node:fs";
import { CoreV1Api, KubeConfig, type V1Pod, Watch } from "@kubernetes/client-node";
import { type AuditEvent, agentUser, auditEvents, describeRequest } from "../test/kit/cluster/audit.js";
import { RealCluster } from "../test/kit/cluster/cluster.js";
import { hostPort } from "../test/kit/cluster/families.js";
import { nodeName, paths } from "../test/kit/cluster/layout.js";
import { Meshcni } from "../test/kit/cluster/meshcni.js";
import { chainedTypes, primaryConflist, primaryConflistPath } from "../test/kit/cluster/node.js";
import { asList, meshedPod, plainPod } from "../test/kit/cluster/workloads.js";
import { sleep, until } from "../test/kit/common.js";
import { agentUsage, churn, type NodeAgent, printAgentUsage } from "./cluster-agents.js";
import {
  chainLinkerdPattern,
  installIstioCni,
  istioInbound,
  istioPod,
  istioUser,
  removeIstioCni,
  serviceAccountUser,
} from "./cluster-peers.js";
import { printTable, type Summary, saveResults, summarize } from "./stats.js";

const pods = 40;
const namespace = "bench";
/** Pods live this long under churn: long enough for most to start on this node before they go. */
const churnLifetimeSeconds = 10;
/** A meshed pod as Linkerd's injector writes one (the proxy a native sidecar). */
const linkerdPod = (name: string) => meshedPod(name, { namespace, sidecar: "native" }) as V1Pod;

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
  /** Whose API requests are counted per pod start: the chained plugin's. */
  requests?: { who: string; match: (event: AuditEvent) => boolean };
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
    await api.createNamespacedPod({ namespace, body: (round.pod ?? linkerdPod)(name) });
    await until(() => times.ready !== undefined, 60_000, 5);
  }
  const sandboxesAfter = await runPodSandboxSoFar(cluster);
  await round.check?.([...seen.keys()].at(-1)!);
  if (round.requests) {
    const requests = auditEvents().filter((event) => event.requestReceivedTimestamp >= since && round.requests!.match(event));
    const kinds: Record<string, number> = {};
    for (const request of requests) kinds[describeRequest(request)] = (kinds[describeRequest(request)] ?? 0) + 1;
    const each = Object.entries(kinds).map(([kind, count]) => `${kind} ×${count}`);
    console.log(`${label}: ${(requests.length / pods).toFixed(2)} API requests per pod start (${round.requests.who}: ${each.join(", ")})`);
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

/** Who a request in the audit log came from: a ServiceAccount, and for Istio's (its plugin uses its node agent's token) which binary. */
const from = (user: string, agent?: string) => (event: AuditEvent) =>
  event.user.username === user && (agent === undefined || (event.userAgent ?? "").startsWith(`${agent}/`));

/** The two node agents on the node at once. */
const nodeAgents: NodeAgent[] = [
  { name: "meshcni's agent", command: "meshcni", argument: "install", requests: from(agentUser()) },
  { name: "Istio's install-cni", command: "install-cni", argument: "--log_output_level=info", requests: from(istioUser, "install-cni") },
];

export async function benchCluster(): Promise<void> {
  // Istio's CNI plugin and node agent are built for this bench alone (components.sh).
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
    const linkerdPattern = { who: "its ServiceAccount", match: from(serviceAccountUser("linkerd-cni")) };
    rows.push(...(await podStarts(cluster, api, watch, "Go linkerd-cni pattern chained", { requests: linkerdPattern })));
    writeFileSync(primaryConflistPath, JSON.stringify(primaryConflist()));
    await installIstioCni(cluster);
    const istio: Round = {
      pod: (name) => istioPod(name, namespace),
      requests: { who: "istio-cni, the plugin", match: from(istioUser, "istio-cni") },
      // Through Istio's redirect to its proxy's 15006, with real TCP from an unmeshed pod.
      check: async (name) => {
        const ip = (await api.readNamespacedPod({ namespace, name })).status!.podIP!;
        const answer = await cluster.connect("client", hostPort(ip, 8080));
        if (!answer.startsWith(istioInbound)) throw new Error(`istio-cni did not redirect ${name}: ${answer}`);
      },
    };
    rows.push(...(await podStarts(cluster, api, watch, "istio-cni chained (sidecar mode)", istio)));
    await removeIstioCni(cluster);
    await new Meshcni(cluster).deploy();
    rows.push(
      ...(await podStarts(cluster, api, watch, "meshcni chained (agent)", { requests: { who: "its agent", match: from(agentUser()) } })),
    );
    // The primary alone again, once the first round's warm-up is past: the order of the rounds is not what differs.
    await cluster.kubectl(["-n", "meshcni", "delete", "daemonset", "meshcni", "--wait"]);
    await until(() => !chainedTypes().includes("meshcni"), 60_000, 250);
    rows.push(...(await podStarts(cluster, api, watch, "primary alone, again")));
    printTable(`Pod start on the real node (${pods} meshed pods, one after another)`, rows);
    // Both node agents at once, the same node, the same churn: half the pods Linkerd's, half Istio's.
    await new Meshcni(cluster).deploy();
    await installIstioCni(cluster);
    // Idle once the sweeps have seen the last round's pods go (the condition's counts settle).
    await sleep(70_000);
    const idle = await agentUsage(nodeAgents, 180);
    const mixed = (name: string, index: number) => (index % 2 ? istioPod(name, namespace) : linkerdPod(name));
    const churning = await agentUsage(nodeAgents, 60, (signal) => churn(api, namespace, mixed, churnLifetimeSeconds, signal));
    console.log("\nThe node agents side by side (both running; churn: 10 pods/s, half Linkerd's, half Istio's)");
    printAgentUsage("idle", idle);
    printAgentUsage("under churn", churning);
    for (const [agent, usage] of Object.entries(churning)) {
      for (const [kind, perMinute] of Object.entries(usage.byKind))
        console.log(`  ${agent} under churn: ${kind}: ${Math.round(perMinute)}/min`);
    }
    saveResults("cluster", { podStarts: rows, nodeAgents: { idle, churn10PerSecond: churning } });
  } finally {
    await cluster.down();
  }
}
