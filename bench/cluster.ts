// The pod start a user sees, on the real single-node cluster (test/kit/cluster): pod
// creation to its IP (the sandbox's network set up, the CNI chain run) and to Ready, for
// 40 meshed pods started one after another, with the primary alone, with the Go
// linkerd-cni pattern chained after it, and with meshcni; then the agent's API requests
// per minute, idle and under 10 pods/s of churn, as the API server's audit log counts them.
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CoreV1Api, KubeConfig, type V1Pod, Watch } from "@kubernetes/client-node";
import { agentUser, auditEvents } from "../test/kit/cluster/audit.js";
import { RealCluster } from "../test/kit/cluster/cluster.js";
import { apiserverUrl, paths } from "../test/kit/cluster/layout.js";
import { Meshcni } from "../test/kit/cluster/meshcni.js";
import { primaryConflist, primaryConflistPath } from "../test/kit/cluster/node.js";
import { meshedTemplate } from "../test/kit/cluster/workloads.js";
import { sleep, until } from "../test/kit/common.js";
import { buildGoPattern, perRuleLines } from "./plugin.js";
import { printTable, type Summary, saveResults, summarize } from "./stats.js";

const pods = 40;
const namespace = "bench";

/** Creates meshed pods one at a time, each once the last is Ready: how long each took to get its IP and to be Ready. */
async function podStarts(api: CoreV1Api, watch: Watch, label: string): Promise<Summary[]> {
  const seen = new Map<string, { created: number; ip?: number | undefined; ready?: number | undefined }>();
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
  for (let i = 0; i < pods; i++) {
    const name = `${label.replace(/[^a-z]+/g, "-").replace(/^-|-$/g, "")}-${i}`;
    const times: { created: number; ip?: number | undefined; ready?: number | undefined } = { created: performance.now() };
    seen.set(name, times);
    const template = meshedTemplate("bench", { sidecar: "native" }) as { metadata: object; spec: object };
    await api.createNamespacedPod({
      namespace,
      body: { apiVersion: "v1", kind: "Pod", metadata: { ...template.metadata, name }, spec: template.spec } as V1Pod,
    });
    await until(() => times.ready !== undefined, 60_000, 5);
  }
  stream.abort();
  await api.deleteCollectionNamespacedPod({ namespace, gracePeriodSeconds: 0 });
  await until(async () => (await api.listNamespacedPod({ namespace })).items.length === 0, 120_000, 250);
  const all = [...seen.values()];
  return [
    summarize(
      `${label}: to its IP`,
      all.map((t) => t.ip! - t.created),
    ),
    summarize(
      `${label}: to Ready`,
      all.map((t) => t.ready! - t.created),
    ),
  ];
}

/** linkerd-cni's pattern (bench/baselines/linkerd-pattern) as the runtime calls a chained plugin: ADD does its work, any other verb nothing. */
async function chainLinkerdPattern(cluster: RealCluster): Promise<void> {
  const binary = await buildGoPattern();
  await cluster.kubectl(["create", "serviceaccount", "linkerd-cni", "-n", "default"]);
  await cluster.kubectl(["create", "clusterrole", "linkerd-cni", "--verb=get", "--resource=pods,namespaces"]);
  await cluster.kubectl([
    "create",
    "clusterrolebinding",
    "linkerd-cni",
    "--clusterrole=linkerd-cni",
    "--serviceaccount=default:linkerd-cni",
  ]);
  const token = join(paths.dir, "linkerd-cni.token");
  writeFileSync(token, await cluster.kubectl(["create", "token", "linkerd-cni", "-n", "default", "--duration=2h"]));
  const rules = join(paths.dir, "linkerd-cni.rules");
  writeFileSync(rules, `${perRuleLines}\n`);
  const wrapper = join(paths.cniBinDir, "linkerd-pattern");
  writeFileSync(
    wrapper,
    `#!/bin/sh
case "$CNI_COMMAND" in
ADD) exec ${binary} -server ${apiserverUrl} -token-file ${token} -ca-file ${paths.pki}/ca.crt -rules ${rules} -backend nft ;;
VERSION) echo '{"cniVersion":"1.0.0","supportedVersions":["0.3.1","0.4.0","1.0.0"]}' ;;
esac
`,
  );
  chmodSync(wrapper, 0o755);
  const conflist = primaryConflist() as { plugins: object[] };
  writeFileSync(primaryConflistPath, JSON.stringify({ ...conflist, plugins: [...conflist.plugins, { type: "linkerd-pattern" }] }));
  await sleep(2000);
}

/** The agent's requests over `seconds`, while `load` runs (if any): per minute. */
async function agentRequestsPerMinute(seconds: number, load?: (signal: AbortSignal) => Promise<void>): Promise<number> {
  const since = new Date().toISOString();
  const stop = new AbortController();
  const running = load?.(stop.signal);
  await sleep(seconds * 1000);
  stop.abort();
  await running;
  return Math.round((agentRequestsSince(since).length * 60) / seconds);
}

const agentRequestsSince = (since: string) => auditEvents(agentUser()).filter((event) => event.requestReceivedTimestamp >= since);

/** 10 pods/s: each second 10 meshed pods created and the 10 of the second before deleted. */
async function churn(api: CoreV1Api, signal: AbortSignal): Promise<void> {
  let round = 0;
  while (!signal.aborted) {
    const started = performance.now();
    const template = meshedTemplate("churn", { sidecar: "native" }) as { metadata: object; spec: object };
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        api.createNamespacedPod({
          namespace,
          body: {
            apiVersion: "v1",
            kind: "Pod",
            metadata: { ...template.metadata, name: `churn-${round}-${i}` },
            spec: template.spec,
          } as V1Pod,
        }),
      ),
    );
    if (round > 0)
      await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          api.deleteNamespacedPod({ namespace, name: `churn-${round - 1}-${i}`, gracePeriodSeconds: 0 }),
        ),
      );
    round++;
    await sleep(Math.max(0, 1000 - (performance.now() - started)));
  }
  await api.deleteCollectionNamespacedPod({ namespace, gracePeriodSeconds: 0 });
}

export async function benchCluster(): Promise<void> {
  const cluster = new RealCluster();
  await cluster.up();
  try {
    const config = new KubeConfig();
    config.loadFromFile(paths.adminKubeconfig);
    const api = config.makeApiClient(CoreV1Api);
    const watch = new Watch(config);
    // The pods tolerate the startup taint: the primary alone and the Go pattern run without meshcni's agent.
    await cluster.kubectl(["taint", "node", "--all", "meshcni.io/not-ready-"]);
    await cluster.kubectl(["create", "namespace", namespace]);
    const rows: Summary[] = [];
    rows.push(...(await podStarts(api, watch, "primary alone")));
    await chainLinkerdPattern(cluster);
    rows.push(...(await podStarts(api, watch, "Go linkerd-cni pattern chained")));
    writeFileSync(primaryConflistPath, JSON.stringify(primaryConflist()));
    await new Meshcni(cluster).deploy();
    rows.push(...(await podStarts(api, watch, "meshcni chained (agent)")));
    printTable(`Pod start on the real node (${pods} meshed pods, one after another)`, rows);
    const idle = await agentRequestsPerMinute(120);
    const churning = await agentRequestsPerMinute(60, (signal) => churn(api, signal));
    console.log(
      `\nmeshcni's agent, API requests per minute (the API server's audit log): idle ${idle}; under 10 pods/s of churn ${churning}`,
    );
    saveResults("cluster", { podStarts: rows, agentRequestsPerMinute: { idle, churn10PerSecond: churning } });
  } finally {
    await cluster.down();
  }
}
