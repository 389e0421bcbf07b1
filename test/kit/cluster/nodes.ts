import { copyFileSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { until } from "../common.js";
import type { RealCluster } from "./cluster.js";
import { nodeContainerdSpec } from "./containerd.js";
import { imageArchives } from "./images.js";
import { serviceCidr } from "./layout.js";
import type { Leg } from "./leg.js";
import { kubeletSpec, kubeProxySpec, type NodeSite, primaryConflist } from "./node.js";
import { clusterNodesSite, inNode, type NodeLayout, nodeContainerd, nodeLayout, onHost } from "./node-layout.js";
import { createNode, prepareNodesHost, removeNode } from "./node-namespaces.js";
import { type Identity, issue } from "./pki.js";
import { runningPid, startDaemon, stopDaemon } from "./processes.js";
import type { Steps } from "./steps.js";
import type { Components } from "./teardown.js";

/**
 * The nodes of a multi-node cluster (`npm run cluster -- up --nodes N`): each node's
 * namespaces (node-namespaces.ts), then its containerd, images, kubelet and kube-proxy,
 * every one of them inside the node. The control plane stays on the host, at the first
 * address of the nodes' bridge. docs/plans/multi-node.md has the why of each choice.
 */

/** The layouts of a cluster of `count` nodes: none for one (the single node is the host's, as every suite has it). */
export function severalNodes(count: number, leg: Leg): NodeLayout[] {
  if (count <= 1) return [];
  if (leg.primary !== "bridge" || leg.families !== "ipv4")
    throw new Error(`several nodes run the bridge primary on IPv4 alone, not the leg's ${leg.primary} on ${leg.families}`);
  // A node has /tmp and /run of its own: the cluster's files there would be out of its sight.
  if (/^\/(tmp|run)(\/|$)/.test(clusterNodesSite.dir))
    throw new Error(
      `several nodes cannot see a cluster dir under /tmp or /run (${clusterNodesSite.dir}): set MESHCNI_CLUSTER_DIR elsewhere`,
    );
  return Array.from({ length: count }, (_, i) => nodeLayout(i + 1));
}

/** A node's kubelet identity: `system:node:<name>` (what the Node authorizer and NodeRestriction check), serving its address. */
export const nodeIdentity = (layout: NodeLayout): Identity => ({
  stem: `kubelet-${layout.name}`,
  subject: `/O=system:nodes/CN=system:node:${layout.name}`,
  serving: `IP:${layout.ip},DNS:${layout.name}`,
});

/** What the node's kubelet and kube-proxy are told (node.ts), as the node sees its paths. */
export const nodeSite = (layout: NodeLayout): NodeSite => ({
  name: layout.name,
  ips: [layout.ip],
  cgroupRoot: layout.cgroupRoot,
  kubelet: nodeIdentity(layout),
  runtimeEndpoint: `unix://${nodeContainerd(layout).socket}`,
  kubeletRoot: "/var/lib/kubelet",
  dir: layout.dir,
  clusterCidrs: [`${clusterNodesSite.podsNet}.0.0/16`],
  wrap: (argv) => inNode(layout, argv),
  suffix: `@${layout.name}`,
});

/** ctr against a node's containerd, from the host (its socket is on a dir of the node's own). */
export async function nodeCtr(bin: Components, layout: NodeLayout, ...args: string[]): Promise<string> {
  const socket = onHost(layout, nodeContainerd(layout).socket);
  const { stdout } = await execa(join(bin.containerd, "ctr"), ["--address", socket, "--namespace", "k8s.io", ...args]);
  return stdout;
}

/** The host's side of every node: the bridge with the control plane's address, the mount the namespace files are bound on. */
export const prepareNodes = () => prepareNodesHost(clusterNodesSite);

/**
 * One node, up to its kubelet registering: its namespaces, the Service range routed to its
 * link (kube-proxy's DNAT comes after the route lookup for the node's own connections), the
 * primary's plugins and conflist for its pod range, containerd with the images, kubelet and kube-proxy.
 */
export async function startNode(bin: Components, leg: Leg, layout: NodeLayout, all: NodeLayout[], images: string[]): Promise<void> {
  await createNode(clusterNodesSite, layout, all);
  await execa("ip", ["-n", layout.netns, "route", "add", serviceCidr, "dev", "eth0"]);
  for (const plugin of ["bridge", "host-local", "loopback", "portmap"])
    copyFileSync(join(bin["cni-plugins"], plugin), onHost(layout, `/opt/cni/bin/${plugin}`));
  const conflist = primaryConflist(undefined, { cidrs: [layout.podCidr], ipamDir: "/var/lib/cni/networks" });
  writeFileSync(onHost(layout, "/etc/cni/net.d/10-primary.conflist"), `${JSON.stringify(conflist, null, 2)}\n`);
  startDaemon(nodeContainerdSpec(bin.containerd, leg.containerd, layout));
  await until(() => existsSync(onHost(layout, nodeContainerd(layout).socket)), 30_000, 50);
  for (const archive of images) await nodeCtr(bin, layout, "images", "import", "--all-platforms", archive);
  const k8s = (command: string) => join(bin.kubernetes, command);
  startDaemon(kubeletSpec(k8s("kubelet"), leg.kubernetes, nodeSite(layout)));
  startDaemon(kubeProxySpec(k8s("kube-proxy"), nodeSite(layout)));
}

/** Every node started, one after the other (each imports the images: 2 cores), then each Ready. */
export async function upNodes(cluster: RealCluster, steps: Steps, layouts: NodeLayout[]): Promise<void> {
  const images = await imageArchives();
  for (const layout of layouts) {
    await steps.run(`${layout.name}: its namespaces, containerd, images, kubelet and kube-proxy`, nodeDaemons(layout), () =>
      startNode(cluster.bin, cluster.leg, layout, layouts, images),
    );
  }
  await steps.run("every node Ready", [], async () => {
    for (const layout of layouts) await cluster.waitNodeReady(90_000, layout.name, `kubelet@${layout.name}`);
  });
}

/** A node's daemons as processes.ts names them, kubelet first (it would start again what is stopped under it). */
export const nodeDaemons = (layout: NodeLayout) => ["kubelet", "kube-proxy", "containerd"].map((name) => `${name}@${layout.name}`);

/** A node joining the running cluster: its kubelet's identity, the node as at `up`, each running node's route to its pods; then Ready. */
export async function addNode(cluster: RealCluster, layout: NodeLayout, running: NodeLayout[]): Promise<void> {
  await issue(nodeIdentity(layout));
  await startNode(cluster.bin, cluster.leg, layout, [...running, layout], await imageArchives());
  for (const other of running) await execa("ip", ["-n", other.netns, "route", "replace", layout.podCidr, "via", layout.ip]);
  await cluster.waitNodeReady(90_000, layout.name, `kubelet@${layout.name}`);
}

/** A node powered off for good: its daemons killed, then everything in it and the routes to it; its Node object is left to the caller. */
export async function removeNodeForGood(layout: NodeLayout, others: NodeLayout[]): Promise<void> {
  for (const daemon of nodeDaemons(layout)) await stopDaemon(daemon, "SIGKILL");
  await removeNode(layout, others);
}

/** A path as the node sees it, mounts made inside the node included (a pod's projected volume), read through its kubelet's root. */
export function asNodeSees(layout: NodeLayout, path: string): string {
  const pid = runningPid(`kubelet@${layout.name}`);
  if (!pid) throw new Error(`kubelet@${layout.name} is not running`);
  return `/proc/${pid}/root${path}`;
}
