// The agent as the API server sees it (issue 18): its peak memory on clusters of 100, 10,000
// and 30,000 namespaces (realistic metadata: labels, last-applied annotations, managedFields),
// the requests it makes when nothing changes, and what it costs the node and the API under
// churn (10 meshed pods created and 10 deleted a second on its node).
import { readFileSync, writeFileSync } from "node:fs";
import { AgentHarness } from "../test/kit/agent/harness.js";
import { conflist } from "../test/kit/agent/host.js";
import { FakeApiServer, podObject } from "../test/kit/api/server.js";
import { sleep, until } from "../test/kit/common.js";
import { saveResults } from "./stats.js";

const node = "bench-node";

/** A namespace as clusters hold them: labels, kubectl's last-applied annotation, managedFields (~1.5 KB). */
function namespaceObject(i: number) {
  const name = `team-${i}`;
  const labels = { "kubernetes.io/metadata.name": name, team: `t${i % 50}`, env: i % 3 ? "prod" : "dev" };
  return {
    metadata: {
      name,
      uid: `ns-uid-${i}`,
      creationTimestamp: "2026-01-01T00:00:00Z",
      labels,
      annotations: {
        "kubectl.kubernetes.io/last-applied-configuration": JSON.stringify({
          apiVersion: "v1",
          kind: "Namespace",
          metadata: { labels, name },
        }),
        ...(i % 10 === 0 ? { "config.linkerd.io/skip-outbound-ports": "5432" } : {}),
      },
      managedFields: [
        {
          manager: "kubectl-client-side-apply",
          operation: "Update",
          apiVersion: "v1",
          time: "2026-01-01T00:00:00Z",
          fieldsType: "FieldsV1",
          fieldsV1: {
            "f:metadata": {
              "f:annotations": { ".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {} },
              "f:labels": { ".": {}, "f:env": {}, "f:team": {}, "f:kubernetes.io/metadata.name": {} },
            },
          },
        },
      ],
    },
    spec: { finalizers: ["kubernetes"] },
    status: { phase: "Active" },
  };
}

/** A meshed pod of the node as the API holds it: containers with images, env, resources, probes; conditions (~4 KB). */
function podOfNode(i: number) {
  const pod = podObject(`team-${i % 100}`, `app-${i}`, {
    proxy: "container",
    nodeName: node,
    podIP: `10.254.${i >> 8}.${i & 255}`,
    owned: true,
  });
  const container = (name: string) => ({
    name,
    image: `registry.example/${name}:1.${i}`,
    env: Array.from({ length: 12 }, (_, j) => ({ name: `SETTING_${j}`, value: `value-${j}-${"x".repeat(20)}` })),
    resources: { requests: { cpu: "100m", memory: "128Mi" }, limits: { memory: "256Mi" } },
    readinessProbe: { httpGet: { path: "/ready", port: 8080 }, periodSeconds: 5 },
    volumeMounts: [{ name: "token", mountPath: "/var/run/secrets/kubernetes.io/serviceaccount", readOnly: true }],
  });
  return {
    ...pod,
    spec: {
      ...(pod.spec as object),
      containers: [container("app"), container("linkerd-proxy")],
      volumes: [{ name: "token", projected: { sources: [] } }],
    },
    status: {
      ...(pod.status as object),
      conditions: ["Initialized", "Ready", "ContainersReady", "PodScheduled"].map((type) => ({
        type,
        status: "True",
        lastTransitionTime: "2026-01-01T00:00:00Z",
      })),
    },
  };
}

interface Memory {
  namespaces: number;
  pods: number;
  peakMb: number;
  targetMb: number | undefined;
}

/** The agent's peak resident set once it has listed and watches the cluster and swept its node. */
async function peakMemory(namespaces: number, pods: number, targetMb: number | undefined): Promise<Memory> {
  const api = await new FakeApiServer().start();
  const host = new AgentHarness();
  try {
    for (let i = 0; i < namespaces; i++) api.addNamespace(namespaceObject(i));
    for (let i = 0; i < pods; i++) api.addPod(podOfNode(i));
    writeFileSync(host.path("10-calico.conflist"), conflist("k8s-pod-network", [{ type: "calico" }]));
    await host.startWithApi(api, ["--node", node]);
    // Polled gently: scraping /metrics every few ms would itself raise the agent's peak.
    await until(async () => (await host.metric('meshcni_meshed_pods{status="unknown"}')) === pods, 60_000, 250);
    await sleep(2000);
    return { namespaces, pods, peakMb: Math.round(host.peakRssMb() * 10) / 10, targetMb };
  } finally {
    await host.cleanup();
    await api.stop();
  }
}

/** The CPU seconds a process and its waited-for children used (utime, stime, cutime, cstime). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return fields.slice(11, 15).reduce((sum, ticks) => sum + Number(ticks), 0) / 100;
}

export async function benchAgentApi() {
  const memory = [await peakMemory(100, 110, undefined), await peakMemory(10_000, 110, 80), await peakMemory(30_000, 250, 100)];
  console.log("\nmeshcni install against the API: peak RSS (VmHWM) by cluster size, compiled binary");
  for (const row of memory) {
    const target = row.targetMb === undefined ? "" : `${row.peakMb <= row.targetMb ? "met   " : "MISSED"}  <= ${row.targetMb} MB`;
    console.log(`${`${row.namespaces} namespaces, ${row.pods} pods on the node`.padEnd(60)}${`${row.peakMb} MB`.padEnd(10)}${target}`);
  }

  // Idle: ready, swept, then two minutes in which nothing changes (default watch timeouts).
  const api = await new FakeApiServer().start();
  const host = new AgentHarness();
  try {
    for (let i = 0; i < 100; i++) api.addNamespace(namespaceObject(i));
    for (let i = 0; i < 20; i++) api.addPod(podOfNode(i));
    writeFileSync(host.path("10-calico.conflist"), conflist("k8s-pod-network", [{ type: "calico" }]));
    await host.startWithApi(api, ["--node", node, "--audit-seconds", "60"]);
    await until(async () => (await host.metric('meshcni_meshed_pods{status="unknown"}')) === 20, 20_000, 250);
    const idleMs = 120_000;
    let before = api.requests.length;
    await sleep(idleMs);
    const idlePerMinute = ((api.requests.length - before) * 60_000) / idleMs;
    console.log(`${"idle: API requests a minute (3 watches of 5-10 min, sweeps from the caches)".padEnd(60)}${idlePerMinute}`);

    // Churn: 10 meshed pods created and 10 deleted a second, for a minute.
    const pid = host.pid!;
    const churnSeconds = 60;
    const cpuBefore = cpuSeconds(pid);
    before = api.requests.length;
    const sweepsBefore = host.logs.filter((line) => line.msg === "sweep").length;
    const created = new Map<string, number>();
    let next = 1000;
    const started = performance.now();
    while (performance.now() - started < churnSeconds * 1000) {
      for (let k = 0; k < 10; k++) {
        const pod = podOfNode(next);
        api.addPod(pod);
        created.set(`${pod.metadata!.namespace}/${pod.metadata!.name}`, Date.now());
        if (next - 1000 >= 20) {
          const old = podOfNode(next - 20);
          api.deletePod(old.metadata!.namespace!, old.metadata!.name!);
        }
        next++;
      }
      await sleep(1000);
    }
    const cpu = cpuSeconds(pid) - cpuBefore;
    const requests = api.requests.slice(before).filter((request) => request.who === "agent");
    const sweeps = host.logs.filter((line) => line.msg === "sweep").length - sweepsBefore;
    // How long after its creation a pod was named in a sweep.
    const judged = host.logs
      .filter((line) => line.msg === "sweep" && Array.isArray(line.pods))
      .flatMap((line) => (line.pods as string[]).map((pod) => Date.parse(String(line.time)) - (created.get(pod) ?? Number.NaN)))
      .filter((ms) => Number.isFinite(ms))
      .sort((a, b) => a - b);
    const result = {
      cpuPercentOfOneCore: Math.round((cpu / churnSeconds) * 1000) / 10,
      apiRequestsPerSecond: Math.round((requests.length / churnSeconds) * 100) / 100,
      sweepsPerSecond: Math.round((sweeps / churnSeconds) * 100) / 100,
      judgedWithinMs: {
        p50: Math.round(judged[Math.floor(judged.length / 2)] ?? Number.NaN),
        max: Math.round(judged.at(-1) ?? Number.NaN),
      },
    };
    console.log(
      `${"churn (10 created + 10 deleted a second): agent + sweeps CPU".padEnd(60)}${result.cpuPercentOfOneCore}% of a core  (target <= 15%)`,
    );
    console.log(`${"churn: API requests a second from the agent and its sweeps".padEnd(60)}${result.apiRequestsPerSecond}  (target <= 2)`);
    console.log(`${"churn: sweeps a second".padEnd(60)}${result.sweepsPerSecond}`);
    console.log(`${"churn: a new pod judged after (p50 / max)".padEnd(60)}${result.judgedWithinMs.p50} / ${result.judgedWithinMs.max} ms`);
    const all = { memory, idlePerMinute, churn: result };
    console.log(`results: ${saveResults("agent-api", all)}`);
    return all;
  } finally {
    await host.cleanup();
    await api.stop();
  }
}
