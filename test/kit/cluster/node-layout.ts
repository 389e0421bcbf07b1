import { join } from "node:path";
import type { ContainerdSite } from "./containerd.js";
import { cgroupRoot, clusterDir } from "./layout.js";

/**
 * Where node i of a multi-node cluster lives (docs/plans/multi-node.md): a network namespace
 * on the nodes' bridge with the control plane at its first address, a pod range of its own
 * routed through its address, and a mount namespace in which its own dirs sit on the
 * standard paths, so one DaemonSet's hostPaths mean the node's files on every node.
 * Pure: what the harness makes and what teardown finds again are named here alone.
 */
export interface NodeLayout {
  index: number;
  name: string;
  /** Its address on the nodes' bridge (kubelet's node IP). */
  ip: string;
  podCidr: string;
  /** The netns, under /run/netns (`ip netns exec` is for looking only: it remounts /sys). */
  netns: string;
  /** The host's end of the node's veth, on the nodes' bridge. */
  veth: string;
  /** Everything the node writes, on the host. */
  dir: string;
  /** The file its mount namespace is bound on. */
  mountNs: string;
  /** kubelet's cgroup root: one per node under the cluster's, so teardown finds all. */
  cgroupRoot: string;
  /** Host dirs bound on the standard paths inside the node's mount namespace (besides its own /run and /tmp). */
  binds: Array<{ path: string; source: string }>;
}

/** Where the names, dirs and addresses go: the cluster's, or a test's own (so it never meets a running cluster). */
export interface NodesSite {
  dir: string;
  /** The prefix of every link and netns name. */
  prefix: string;
  /** The nodes' /24 (its first three octets): the control plane at .1, node i at .(10+i). */
  nodesNet: string;
  /** The pods' /16 (its first two octets): node i's pods in its .i.0/24. */
  podsNet: string;
  /** Where every node's cgroups go, so removal finds them. */
  cgroupRoot: string;
}

export const clusterNodesSite: NodesSite = { dir: clusterDir, prefix: "mcl", nodesNet: "10.254.0", podsNet: "10.252", cgroupRoot };

/** The nodes' bridge, and the control plane's address on it. */
export const nodesBridge = (site: NodesSite) => `${site.prefix}-nodes`;
export const controlPlaneIp = (site: NodesSite) => `${site.nodesNet}.1`;
const nodesPrefixLength = 24;
/** Where mount namespace files are bound: a private mount of its own (unshare --mount=FILE needs one). */
export const mountNsDir = (site: NodesSite) => join(site.dir, "ns");

/** The standard paths a node's components and meshcni's DaemonSet use, each a dir of the node's own. */
const boundPaths = {
  "/etc/cni/net.d": "cni-net.d",
  "/opt/cni/bin": "cni-bin",
  "/var/lib/cni": "var-lib-cni",
  "/var/lib/kubelet": "kubelet",
  "/var/log/pods": "log-pods",
  "/var/log/containers": "log-containers",
  "/run/containerd": "run-containerd",
};

export function nodeLayout(index: number, site: NodesSite = clusterNodesSite): NodeLayout {
  if (!Number.isInteger(index) || index < 1 || index > 200) throw new Error(`node index ${index}: 1 to 200`);
  const name = `node-${index}`;
  const dir = join(site.dir, "nodes", name);
  return {
    index,
    name,
    ip: `${site.nodesNet}.${10 + index}`,
    podCidr: `${site.podsNet}.${index}.0/24`,
    netns: `${site.prefix}-${name}`,
    veth: `${site.prefix}-n${index}`,
    dir,
    mountNs: join(mountNsDir(site), `${name}.mnt`),
    cgroupRoot: `${site.cgroupRoot}/${name}`,
    binds: Object.entries(boundPaths).map(([path, source]) => ({ path, source: join(dir, source) })),
  };
}

/** The node's routes: every other node's pods through that node, the control plane's on-link. */
export function nodeRoutes(layout: NodeLayout, all: NodeLayout[]): string[][] {
  return all.filter((other) => other.index !== layout.index).map((other) => [other.podCidr, "via", other.ip]);
}

/** The argv that runs a command in the node: its netns and mount namespace (nsenter execs, so a pid file stays right). */
export const inNode = (layout: NodeLayout, argv: string[]) => [
  "nsenter",
  `--net=/run/netns/${layout.netns}`,
  `--mount=${layout.mountNs}`,
  "--",
  ...argv,
];

export const nodeAddress = (layout: NodeLayout) => `${layout.ip}/${nodesPrefixLength}`;

/** The node's containerd, as it sees its paths: its dir on the host's disk, the rest on the standard paths. */
export const nodeContainerd = (layout: NodeLayout): ContainerdSite => ({
  dir: join(layout.dir, "containerd"),
  socket: "/run/containerd/containerd.sock",
  cniBinDir: "/opt/cni/bin",
  cniConfDir: "/etc/cni/net.d",
  netnsUnderState: false,
});

/** Where the host finds a path the node sees on one of its bound dirs (its containerd's socket, its CNI config). */
export function onHost(layout: NodeLayout, path: string): string {
  const bind = layout.binds.find((candidate) => path === candidate.path || path.startsWith(`${candidate.path}/`));
  if (!bind) throw new Error(`${path} is not on a dir of ${layout.name}'s own`);
  return join(bind.source, path.slice(bind.path.length));
}
