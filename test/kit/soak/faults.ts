// Each fault the soak draws, done for real to the cluster of test/kit/cluster, as the field
// meets it: what it did is returned in words (with what was drawn for it), for the report.
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { imageRepository } from "../../../src/build-info.js";
import type { RealCluster } from "../cluster/cluster.js";
import { compactEtcd } from "../cluster/control-plane.js";
import { otherBuild, otherBuildArchive } from "../cluster/images.js";
import { agentStateDir, nodeName, paths, startupTaint } from "../cluster/layout.js";
import { agentAnswersReady, agentCommit } from "../cluster/meshcni.js";
import { primaryConflist, rewritePrimaryConflist } from "../cluster/node.js";
import { runningPid } from "../cluster/processes.js";
import { rotateSigningKey } from "../cluster/signing-key.js";
import { sleep, until } from "../common.js";
import { processesOf, withDescendants } from "../proc.js";
import { between, type FaultKind } from "./draw.js";
import { soakLabel, soakNamespaces } from "./workload.js";

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
  "agent-container-killed": async () => {
    const agents = processesOf("meshcni", "install");
    killAll(agents);
    return `the agent's process killed (${agents.length} found)`;
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
    await until(async () => !(await agentAnswersReady()), 60_000, 500);
    await cluster.kubectl(["-n", "meshcni", "rollout", "restart", "daemonset/meshcni"]);
    return "the ServiceAccount signing key rotated, the old one dropped; meshcni's DaemonSet restarted once its agent said not ready";
  },
  "daemonset-rolled": async ({ cluster }) => {
    const image = (
      await cluster.kubectl(["-n", "meshcni", "get", "daemonset", "meshcni", "-o", "jsonpath={.spec.template.spec.containers[0].image}"])
    ).trim();
    await cluster.ctr("images", "import", "--all-platforms", await otherBuildArchive());
    const other = `${imageRepository}:${otherBuild.tag}`;
    const commits: Array<string | undefined> = [];
    for (const to of [other, image]) {
      await cluster.kubectl(["-n", "meshcni", "set", "image", "daemonset/meshcni", `install=${to}`]);
      await cluster.kubectl(["-n", "meshcni", "rollout", "status", "daemonset/meshcni", "--timeout=120s"]);
      commits.push(await agentCommit());
    }
    if (commits[0] !== otherBuild.commit) throw new Error(`rolled out to ${other}, the agent runs commit ${commits[0]}`);
    return `meshcni's DaemonSet rolled out to another build (${other}, commit ${commits[0]}) and back (commit ${commits[1]})`;
  },
  "annotation-flipped": async ({ cluster, random }) => {
    const forMs = between(random, 5000, 20_000);
    // A port no check connects to: running pods keep the plan they started with, new ones take the changed one,
    // and no answer on 8080 changes (the checks' expectations hold whichever plan a pod runs).
    const [key, on] = [
      ["config.linkerd.io/skip-inbound-ports", "config.linkerd.io/skip-outbound-ports"][between(random, 0, 1)]!,
      soakNamespaces[between(random, 0, soakNamespaces.length - 1)]!,
    ];
    const pods = (await cluster.kubectl(["-n", on, "get", "pods", "-l", `${soakLabel}!=unmeshed`, "-o", "name"]))
      .split("\n")
      .filter(Boolean);
    let target = random() < 0.5 || pods.length === 0 ? ["namespace", on] : ["-n", on, pods[between(random, 0, pods.length - 1)]!];
    await cluster.kubectl(["annotate", ...target, `${key}=9999`, "--overwrite"]).catch(async () => {
      target = ["namespace", on]; // the pod went meanwhile
      await cluster.kubectl(["annotate", ...target, `${key}=9999`, "--overwrite"]);
    });
    await sleep(forMs);
    // The pod may be gone by now (the load deletes pods all along): nothing to take back then.
    await cluster.kubectl(["annotate", ...target, `${key}-`]).catch(() => undefined);
    return `${key}=9999 on ${target.join(" ")} for ${forMs} ms, then removed`;
  },
  "backend-switched": async ({ cluster }) => {
    const { data } = await cluster.get<{ data: { cni_network_config: string } }>("-n", "meshcni", "configmap", "meshcni-config");
    const entry = JSON.parse(data.cni_network_config) as { linkerd: Record<string, unknown> };
    const from = String(entry.linkerd["iptables-mode"]);
    const to = from === "nftables" ? "auto" : "nftables";
    entry.linkerd["iptables-mode"] = to;
    const patch = JSON.stringify({ data: { cni_network_config: JSON.stringify(entry, null, 2) } });
    await cluster.kubectl(["-n", "meshcni", "patch", "configmap", "meshcni-config", "--type=merge", "-p", patch]);
    // As an operator changes it: the entry is the agent's environment, taken at its start.
    await cluster.kubectl(["-n", "meshcni", "rollout", "restart", "daemonset/meshcni"]);
    await cluster.kubectl(["-n", "meshcni", "rollout", "status", "daemonset/meshcni", "--timeout=120s"]);
    const rolled = performance.now();
    const moved = () => recordedBackends().every((backend) => (to === "nftables") === (backend === "nftables"));
    await until(moved, 180_000, 500).catch(() => {
      throw new Error(`running pods' redirects not moved to ${to} within 180 s: ${recordedBackends().join(", ")}`);
    });
    const seconds = ((performance.now() - rolled) / 1000).toFixed(1);
    return `meshcni's iptables-mode changed from ${from} to ${to} and its DaemonSet restarted: ${recordedBackends().length} records in the new backend ${seconds} s after the rollout`;
  },
};

/** The backend each of the node's ADD records names (the agent's state dir on the host). */
function recordedBackends(): string[] {
  const dir = join(agentStateDir, "attachments");
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((file) => file.endsWith(".json"))
    .flatMap((file) => {
      try {
        return [(JSON.parse(readFileSync(join(dir, file), "utf8")) as { backend: string }).backend];
      } catch {
        return []; // removed meanwhile
      }
    });
}
