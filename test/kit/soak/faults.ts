// Each fault the soak draws, done for real to the cluster of test/kit/cluster, as the field
// meets it: what it did is returned in words (with what was drawn for it), for the report.
import { existsSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { agentProcess } from "../cluster/agent-process.js";
import type { RealCluster } from "../cluster/cluster.js";
import { compactEtcd } from "../cluster/control-plane.js";
import { nodeName, paths, startupTaint } from "../cluster/layout.js";
import { agentAnswersReady } from "../cluster/meshcni.js";
import { primaryConflist, rewritePrimaryConflist } from "../cluster/node.js";
import { runningPid } from "../cluster/processes.js";
import { rotateSigningKey } from "../cluster/signing-key.js";
import { sleep, until } from "../common.js";
import { processesOf, withDescendants } from "../proc.js";
import { between, type FaultKind } from "./draw.js";
import { meshcniFaults } from "./meshcni-faults.js";

export interface FaultContext {
  cluster: RealCluster;
  random: () => number;
}

const agentPods = ["-n", "meshcni", "delete", "pod", "-l", "app.kubernetes.io/name=meshcni"];
const sortsFirst = join(paths.cniConfDir, "00-soak-first.conflist");

const killAll = (pids: number[]) => {
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
};

export const faults: Record<FaultKind, (context: FaultContext) => Promise<string>> = {
  "apiserver-killed": async ({ cluster, random }) => {
    const downMs = between(random, 1000, 8000);
    await cluster.stop("kube-apiserver", "SIGKILL");
    await sleep(downMs);
    cluster.startAgain("kube-apiserver");
    await cluster.waitApiserver();
    return `kube-apiserver killed, started again after ${downMs} ms`;
  },
  "apiserver-frozen": async ({ random }) => {
    const frozenMs = between(random, 3000, 20_000);
    const pid = runningPid("kube-apiserver");
    if (!pid) throw new Error("kube-apiserver is not running");
    process.kill(pid, "SIGSTOP");
    await sleep(frozenMs);
    process.kill(pid, "SIGCONT");
    return `kube-apiserver frozen (SIGSTOP) for ${frozenMs} ms`;
  },
  "etcd-restarted": async ({ cluster, random }) => {
    const downMs = between(random, 500, 4000);
    await cluster.restart("etcd", { signal: "SIGKILL", downMs });
    await cluster.waitApiserver();
    return `etcd killed, started again after ${downMs} ms`;
  },
  "etcd-compacted": async () => `etcd compacted at revision ${await compactEtcd()}`,
  "agent-pod-deleted": async ({ cluster }) => {
    await cluster.kubectl([...agentPods, "--wait=false"]);
    return "the agent's pod deleted";
  },
  "agent-pod-force-deleted": async ({ cluster }) => {
    await cluster.kubectl([...agentPods, "--grace-period=0", "--force", "--wait=false"]);
    return "the agent's pod force-deleted";
  },
  "agent-container-killed": async ({ cluster }) => {
    const agent = await agentProcess(cluster);
    if (agent === undefined) throw new Error("no agent container runs on the node");
    killAll([agent]);
    return `the agent's process killed (pid ${agent}, its pod's container)`;
  },
  "kubelet-restarted": async ({ cluster }) => {
    await cluster.restart("kubelet", { signal: "SIGKILL" });
    await cluster.waitNodeReady();
    return "kubelet killed and started again";
  },
  "containerd-restarted": async ({ cluster }) => {
    await cluster.restart("containerd", { signal: "SIGKILL" });
    return "containerd killed and started again";
  },
  "power-cut": async ({ cluster, random }) => {
    const downMs = between(random, 1000, 5000);
    // At once, as power goes: kubelet, containerd, every shim and every container below them.
    const shims = processesOf("containerd-shim-runc-v2", paths.containerdSocket);
    const containers = withDescendants(shims);
    killAll([runningPid("kubelet") ?? 0, runningPid("containerd") ?? 0, ...containers].filter(Boolean));
    await cluster.stop("kubelet", "SIGKILL");
    await cluster.stop("containerd", "SIGKILL");
    await sleep(downMs);
    // Started again as the node's init system would: the runtime first, kubelet once it answers (its socket file outlives it).
    cluster.startAgain("containerd");
    await until(
      () =>
        cluster.ctr("version").then(
          () => true,
          () => false,
        ),
      30_000,
      100,
    );
    cluster.startAgain("kubelet");
    await cluster.waitNodeReady(180_000);
    return `power cut: kubelet, containerd, ${shims.length} shims and ${containers.length - shims.length} container processes killed at once, back after ${downMs} ms`;
  },
  "primary-installer-ran": async () => {
    await rewritePrimaryConflist();
    return "the primary's conflist written again by its installer";
  },
  "config-sorting-first": async ({ random }) => {
    const forMs = between(random, 5000, 20_000);
    // The primary's network name kept: host-local keeps its store per name, and another name
    // would hand out addresses that running pods hold (two pods at one address, on one bridge).
    writeFileSync(sortsFirst, JSON.stringify(primaryConflist()));
    await sleep(forMs);
    rmSync(sortsFirst, { force: true });
    return `another conflist sorting first (00-soak-first) for ${forMs} ms, then removed`;
  },
  "plugin-binary-removed": async ({ random }) => {
    const forMs = between(random, 3000, 15_000);
    const plugin = join(paths.cniBinDir, "portmap");
    const aside = `${plugin}.soak-aside`;
    if (existsSync(plugin)) renameSync(plugin, aside);
    await sleep(forMs);
    renameSync(aside, plugin);
    return `portmap taken out of the bin dir for ${forMs} ms`;
  },
  "startup-taint-readded": async ({ cluster }) => {
    await cluster.kubectl(["taint", "node", nodeName, `${startupTaint}=true:NoSchedule`, "--overwrite"]);
    return "the startup taint added to the node again";
  },
  "signing-key-rotated": async ({ cluster }) => {
    await rotateSigningKey(cluster, "kept");
    return "the ServiceAccount signing key rotated, the old one kept";
  },
  "signing-key-dropped": async ({ cluster }) => {
    await rotateSigningKey(cluster, "dropped");
    // Every token out is refused until kubelet renews it (up to ~48 min): the remedy the docs give, meshcni's pods restarted.
    // The agent hears the refusal at its first request the server answers: through the kubernetes Service, once kube-proxy
    // has the restarted server's endpoint back (a run here took 71 s), after its watches' back-off.
    const started = performance.now();
    const said = await until(async () => !(await agentAnswersReady()), 180_000, 500).then(
      () => true,
      () => false,
    );
    await cluster.kubectl(["-n", "meshcni", "rollout", "restart", "daemonset/meshcni"]);
    if (!said) throw new Error("the agent still answered ready 180 s after every token was refused (restarted anyway)");
    return `the ServiceAccount signing key rotated, the old one dropped; meshcni's DaemonSet restarted once its agent said not ready (${((performance.now() - started) / 1000).toFixed(1)} s)`;
  },
  ...meshcniFaults,
};
