import { readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { CriClient } from "../cri/client.js";
import { unmountUnder } from "../leftovers.js";
import { projectRoot } from "../paths.js";
import { calicoImagePlugins } from "./calico.js";
import { removeNodeCgroups, restoreHost } from "./host.js";
import { paths } from "./layout.js";
import { currentLeg, legEnv } from "./leg.js";
import { clusterNodesSite, nodeContainerd, nodeLayout, onHost } from "./node-layout.js";
import { removeNodes } from "./node-namespaces.js";
import { recordedDaemons, runningPid, stopDaemon } from "./processes.js";

/** Where components.sh put each component's binaries. */
export interface Components {
  kubernetes: string;
  etcd: string;
  containerd: string;
  "cni-plugins": string;
  helm: string;
  /** Built for a leg whose primary is Calico alone. */
  calico?: string;
  /** Cilium's CNI config writer (build/cluster/cilium/main.go), as cilium-agent runs it. */
  cilium: string;
  /** Istio's CNI plugin and node agent, for `npm run bench cluster` (MESHCNI_ISTIO=1). */
  istio?: string;
}

/** The binaries of this run's leg, built from the Go module proxy (or a user's, MESHCNI_CLUSTER_BIN) by build/cluster/components.sh. */
export async function components(): Promise<Components> {
  const env = legEnv(currentLeg().name);
  const { stdout } = await execa("bash", [join(projectRoot, "build/cluster/components.sh")], { stderr: "inherit", env });
  return Object.fromEntries(stdout.split("\n").map((line) => line.split("=", 2))) as unknown as Components;
}

/** The primary's plugins on the node: Calico's installer copies its image's; else the built ones (cnitool is the netns suite's, not the node's). */
export const primaryPlugins = (bin: Components) =>
  currentLeg().primary === "calico"
    ? calicoImagePlugins
    : readdirSync(bin["cni-plugins"]).filter((name) => !name.startsWith(".") && name !== "cnitool");

/** The order daemons stop in: kubelet first (it would restart what is removed), etcd last. */
const stopOrder = ["kubelet", "kube-proxy", "kube-scheduler", "kube-controller-manager", "containerd", "kube-apiserver", "etcd"];

/** Removes every sandbox through a containerd's CRI, as kubelet would (each DEL runs through the chain), while it still runs. */
async function removeSandboxes(daemon: string, socket: string): Promise<void> {
  if (!runningPid(daemon)) return;
  const client = new CriClient(socket);
  try {
    for (const { id } of await client.listPodSandbox()) {
      await client.stopPodSandbox(id).catch(() => undefined);
      await client.removePodSandbox(id).catch(() => undefined);
    }
  } catch {
    // A containerd that does not answer: its shims and mounts are removed below all the same.
  } finally {
    client.close();
  }
}

/**
 * Removes everything a cluster (this one or a failed run's) left on the machine: its
 * daemons, pods and shims, mounts, cgroups, kube-proxy's chains, links and the forward
 * drop, and its directory. Safe to run when nothing is there.
 */
export async function tearDown(bin?: Components): Promise<void> {
  // With several nodes, each node's daemons are named <daemon>@<node> (nodes.ts).
  const recorded = recordedDaemons();
  for (const name of ["kubelet", ...recorded.filter((name) => name.startsWith("kubelet@"))]) await stopDaemon(name);
  await removeSandboxes("containerd", paths.containerdSocket);
  const nodes = recorded.flatMap((name) => /^containerd@node-(\d+)$/.exec(name)?.slice(1) ?? []).map((index) => nodeLayout(Number(index)));
  for (const layout of nodes) await removeSandboxes(`containerd@${layout.name}`, onHost(layout, nodeContainerd(layout).socket));
  for (const name of [...stopOrder, ...recorded]) await stopDaemon(name);
  // Shims outlive containerd: find them by the address they were given (a node's, by its namespaces).
  await execa("pkill", ["-9", "-f", `containerd-shim-runc-v2 .*-address ${paths.containerdSocket}`], { reject: false });
  await removeNodes(clusterNodesSite);
  await removeNodeCgroups();
  await unmountUnder(paths.dir);
  if (bin) await execa(join(bin.kubernetes, "kube-proxy"), ["--cleanup"], { reject: false });
  await restoreHost();
  rmSync(paths.dir, { recursive: true, force: true });
}
