import { existsSync, readdirSync } from "node:fs";
import { execa } from "execa";
import { expect } from "vitest";
import { until } from "../common.js";
import { meshcniBinary } from "../paths.js";
import type { RealCluster } from "./cluster.js";
import { agentStateDir, nodeName, paths } from "./layout.js";
import { chainedTypes, primaryNetDirFiles, primaryTypes } from "./node.js";
import { identities, kubeconfigOf } from "./pki.js";
import { primaryPlugins } from "./teardown.js";

/** The flags an operator of this node gives `meshcni manifests`: the node's CNI dirs, netns dir and CRI socket. */
export const nodeFlags = [
  ...["--net-dir", paths.cniConfDir, "--bin-dir", paths.cniBinDir],
  ...["--netns-dir", paths.netnsDir, "--cri-socket", paths.containerdSocket],
];

/** `meshcni manifests` with the node's flags (none with several nodes: theirs are the standard paths) and these. */
export async function renderManifests(flags: string[] = [], node = nodeFlags): Promise<string> {
  return (await execa(meshcniBinary, ["manifests", ...node, ...flags])).stdout;
}

/** One pod's verdict in `meshcni audit --output json`. */
export interface AuditedPod {
  namespace: string;
  name: string;
  uid: string;
  status: string;
  details: string[];
}

/** `meshcni audit` run on the node as an operator runs it (the admin's kubeconfig, the node's dirs): its verdicts, or undefined when it could not say. */
export async function auditNode(): Promise<AuditedPod[] | undefined> {
  const dirs = ["--net-dir", paths.cniConfDir, "--netns-dir", paths.netnsDir, "--cri-socket", paths.containerdSocket];
  const result = await execa(
    meshcniBinary,
    ["audit", "--node", nodeName, "--kubeconfig", kubeconfigOf(identities.admin), ...dirs, "--output", "json", "--timeout", "10"],
    { reject: false },
  );
  try {
    return (JSON.parse(String(result.stdout)) as { pods: AuditedPod[] }).pods;
  } catch {
    return undefined; // the API or the runtime did not answer (exit 2, said on stderr)
  }
}

/** The netconf template of rendered manifests with the plugin logging every invocation (debug) to `file` on the host. */
export function withPluginLog(manifests: string, file: string): string {
  const edited = manifests.replace(
    /( *)"log_level": "info",/,
    (_line, indent: string) => `${indent}"log_level": "debug",\n${indent}"log_file": ${JSON.stringify(file)},`,
  );
  if (edited === manifests) throw new Error("no log_level in the rendered netconf template");
  return edited;
}

interface PodList {
  items: Array<{
    metadata: { name: string; uid: string; deletionTimestamp?: string };
    spec: { nodeName?: string };
    status: { podIP?: string; phase?: string; containerStatuses?: Array<{ ready: boolean; restartCount: number }> };
  }>;
}

/** Whether the agent answers ready on the node's port (it runs on the host network), as kubelet's probe asks. */
export const agentAnswersReady = (): Promise<boolean> =>
  fetch("http://127.0.0.1:9911/readyz", { signal: AbortSignal.timeout(5000) }).then(
    (response) => response.ok,
    () => false,
  );

/** The agent's container args with `--plugin-token-seconds`, as an operator adds a flag to the DaemonSet. */
export const withPluginTokenSeconds =
  (seconds: number) =>
  (manifests: string): string => {
    const edited = manifests.replace(
      /^( *)args:\n/m,
      (line, indent: string) => `${line}${indent}  - --plugin-token-seconds\n${indent}  - "${seconds}"\n`,
    );
    if (edited === manifests) throw new Error("no args in the rendered DaemonSet");
    return edited;
  };

/**
 * The agent stopped with its DaemonSet kept: rolled out to an image the node does not have
 * (and may not pull), so the old agent stops (keeping everything) and none replaces it.
 * `kubectl rollout undo` brings it back.
 */
export async function stopAgentKeepingDaemonSet(cluster: RealCluster): Promise<void> {
  const absent = [
    { op: "replace", path: "/spec/template/spec/containers/0/image", value: "ghcr.io/meshcni/meshcni:absent" },
    { op: "replace", path: "/spec/template/spec/containers/0/imagePullPolicy", value: "Never" },
  ];
  await cluster.kubectl(["-n", "meshcni", "patch", "daemonset", "meshcni", "--type=json", "-p", JSON.stringify(absent)]);
  await until(
    async () =>
      (await cluster.get<{ items: unknown[] }>("pods", "-n", "meshcni", "--field-selector=status.phase=Running")).items.length === 0,
    90_000,
    500,
  );
}

/** The messages of the sandbox failures kubelet reported (its FailedCreatePodSandBox Events), in every namespace. */
export const sandboxFailures = (cluster: RealCluster): Promise<string> =>
  cluster.kubectl(["get", "events", "-A", "--field-selector", "reason=FailedCreatePodSandBox", "-o", "jsonpath={.items[*].message}"]);

/** The agent's metrics text on the node's port, "" when it does not answer. */
const agentMetricsText = (host: string) =>
  fetch(`http://${host}:9911/metrics`, { signal: AbortSignal.timeout(5000) }).then(
    (response) => response.text(),
    () => "",
  );

/** The commit of the agent's build answering on the node's port (meshcni_build_info), or undefined when it does not answer. */
export async function agentCommit(host = "127.0.0.1"): Promise<string | undefined> {
  return /^meshcni_build_info\{[^}]*commit="([^"]*)"/m.exec(await agentMetricsText(host))?.[1];
}

/** The value of a metric of the agent's without labels of its own (the node's only), as its text says it; undefined when absent. */
export async function agentMetric(name: string, host = "127.0.0.1"): Promise<string | undefined> {
  return new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, "m").exec(await agentMetricsText(host))?.[1];
}

/** The value of the agent's series `name` whose labels include `labels` (besides the node's), as its text says it; undefined when absent. */
export async function agentSeries(name: string, labels: Record<string, string>, host = "127.0.0.1"): Promise<number | undefined> {
  for (const [, labelText, value] of (await agentMetricsText(host)).matchAll(new RegExp(`^${name}\\{([^}]*)\\} (\\S+)$`, "gm"))) {
    const has = Object.fromEntries([...labelText!.matchAll(/(\w+)="([^"]*)"/g)].map(([, key, held]) => [key, held]));
    if (Object.entries(labels).every(([key, wanted]) => has[key] === wanted)) return Number(value);
  }
  return undefined;
}

/**
 * meshcni on the cluster as an operator installs it: the manifests applied with kubectl,
 * then the DaemonSet's rollout awaited (its pod ready: chained, kubeconfig written).
 */
export class Meshcni {
  constructor(
    readonly cluster: RealCluster,
    readonly namespace = "meshcni",
  ) {}

  /** Applies the manifests rendered with these flags (and the leg's backend), after `edit` (an operator's change to them), and awaits the rollout. */
  async deploy(flags: string[] = [], edit: (manifests: string) => string = (manifests) => manifests): Promise<void> {
    const backend = this.cluster.leg.backend === "auto" ? [] : ["--netconf", `iptables-mode=${this.cluster.leg.backend}`];
    const node = (this.cluster.options.nodes ?? 1) > 1 ? [] : nodeFlags;
    await this.cluster.kubectl(
      ["apply", "-f", "-"],
      edit(await renderManifests(["--namespace", this.namespace, ...backend, ...flags], node)),
    );
    await this.rolledOut();
  }

  async rolledOut(timeoutSeconds = 120): Promise<void> {
    await this.cluster.kubectl(["-n", this.namespace, "rollout", "status", "daemonset/meshcni", `--timeout=${timeoutSeconds}s`]);
  }

  /** The agent's pod on the node (or on `node`, with several), once one runs (not one being deleted). */
  async agentPod(node = nodeName): Promise<PodList["items"][number]> {
    let pod: PodList["items"][number] | undefined;
    await until(
      async () => {
        const list = await this.cluster.get<PodList>("pods", "-n", this.namespace, "-l", "app.kubernetes.io/name=meshcni");
        pod = list.items.find((item) => !item.metadata.deletionTimestamp && item.spec.nodeName === node);
        return pod !== undefined;
      },
      60_000,
      250,
    );
    return pod!;
  }

  /** A field of the agent's container in the DaemonSet's pod template (`args`, `env`), as JSON. */
  async containerField<T>(field: string): Promise<T> {
    const path = `jsonpath={.spec.template.spec.containers[0].${field}}`;
    return JSON.parse(await this.cluster.kubectl(["-n", this.namespace, "get", "daemonset", "meshcni", "-o", path])) as T;
  }

  /** The agent's JSON log lines (this pod's, and its previous container's when asked). */
  async log(previous = false): Promise<Array<Record<string, unknown>>> {
    const pod = await this.agentPod();
    const args = ["-n", this.namespace, "logs", pod.metadata.name, ...(previous ? ["--previous"] : [])];
    return (await this.cluster.kubectl(args))
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  }

  /** `meshcni <command>` run by hand with the cluster admin's kubeconfig, as an operator would. */
  async cli(...args: string[]): Promise<{ exitCode: number; stdout: string; stderr: string }> {
    const result = await execa(meshcniBinary, args, { env: { KUBECONFIG: paths.adminKubeconfig }, reject: false });
    return { exitCode: result.exitCode ?? -1, stdout: result.stdout, stderr: result.stderr };
  }
}

/**
 * After an uninstall: the chain back to the primary's, the net dir holding the primary's
 * config alone, the bin dir the primary's plugins, the state dir emptied (it is the agent's
 * hostPath volume: its records, locks and socket go, the mount point itself kubelet keeps).
 * What is left, in words (waited for a while: the state dir empties as the agent ends).
 */
export async function leftOnNode(cluster: RealCluster): Promise<string[]> {
  const stateLeft = () => (existsSync(agentStateDir) ? readdirSync(agentStateDir) : []);
  await until(() => stateLeft().length === 0, 10_000, 100).catch(() => undefined);
  const differs = (what: string, found: string[], expected: string[]) =>
    JSON.stringify([...found].sort()) === JSON.stringify([...expected].sort()) ? [] : [`${what}: ${found.join(", ")}`];
  return [
    ...(chainedTypes().join(",") === primaryTypes.join(",") ? [] : [`chain: ${chainedTypes().join(", ")}`]),
    ...differs("net dir", readdirSync(paths.cniConfDir), primaryNetDirFiles),
    ...differs("bin dir", readdirSync(paths.cniBinDir), primaryPlugins(cluster.bin)),
    ...differs("state dir", stateLeft(), []),
  ];
}

export async function expectNothingLeftOnNode(cluster: RealCluster): Promise<void> {
  expect(await leftOnNode(cluster)).toEqual([]);
}
