import { join } from "node:path";

/**
 * Where the real cluster lives on this machine: one directory for everything it writes
 * (so a failed run's leftovers are found again and removed), its addresses, and the names
 * of the links it makes. Nothing here routes out of the machine: the node's address sits
 * on a bridge of its own with no port, the service range is routed to that bridge (no
 * dummy driver in this kernel), and pods reach nothing past the host (see host.ts).
 */
export const clusterDir = process.env.MESHCNI_CLUSTER_DIR ?? "/var/lib/meshcni-cluster";
export const nodeName = "node-1";
export const nodeIp = "10.254.0.1";
export const podCidr = "10.252.0.0/24";
export const serviceCidr = "10.253.0.0/24";
/** IPv6 twins of the above, on legs with IPv6: ULA (fd00::/8) only, clear of the uplink's fd00::/64. */
export const nodeIp6 = "fd00:254::1";
export const podCidr6 = "fd00:252::/64";
export const serviceCidr6 = "fd00:253::/108";
/** The `kubernetes` Service's ClusterIP: the first of the range (of the IPv6 one on an IPv6 leg). */
export const kubernetesServiceIp = "10.253.0.1";
export const kubernetesServiceIp6 = "fd00:253::1";
/** Not 6443: the `kubernetes` Service then targets a port linkerd-cni's fallback (443, 6443) does not name, so a control-plane pod's skipped ports are proven read from the real Service. */
export const apiserverPort = 6444;
export const etcdClientUrl = "http://127.0.0.1:2379";
/** The links this cluster makes: the node's address and the pods' bridge. */
export const nodeLink = "mcl-node";
export const podBridge = "mcl-br0";
/** The table holding the forward drop that keeps pod traffic on this machine. */
export const nftTable = "meshcni_cluster";
/** Where the node's cgroups go (kubelet's cgroupRoot), so teardown finds them. */
export const cgroupRoot = "/meshcni-cluster";
/** The primary CNI's network name (libcni caches results under it in /var/lib/cni). */
export const primaryNetwork = "meshcni-cluster-primary";
/** The agent's state dir on the host, as deploy/daemonset.yaml mounts it. */
export const agentStateDir = "/var/run/meshcni";
export const startupTaint = "meshcni.io/not-ready";

/** Paths of the cluster's files, under one directory. */
export const paths = {
  dir: clusterDir,
  pki: join(clusterDir, "pki"),
  logs: join(clusterDir, "logs"),
  run: join(clusterDir, "run"),
  etcdData: join(clusterDir, "etcd"),
  auditLog: join(clusterDir, "logs/audit.log"),
  kubeletRoot: join(clusterDir, "kubelet"),
  containerd: join(clusterDir, "containerd"),
  containerdSocket: join(clusterDir, "containerd/containerd.sock"),
  /** containerd's CRI keeps pod netns under its state dir (netns_mounts_under_state_dir). */
  netnsDir: join(clusterDir, "containerd/state/io.containerd.grpc.v1.cri/netns"),
  cniConfDir: join(clusterDir, "cni/net.d"),
  cniBinDir: join(clusterDir, "cni/bin"),
  ipamDir: join(clusterDir, "cni/ipam"),
  images: join(clusterDir, "images"),
  hostState: join(clusterDir, "host-state.json"),
  adminKubeconfig: join(clusterDir, "admin.kubeconfig"),
};
