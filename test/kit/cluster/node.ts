import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { loadedDefaultChain } from "../../../src/cri/loaded-config.js";
import { connectRuntime } from "../../../src/cri/runtime.js";
import { calicoConflistName, calicoKubeconfigPath, runCalicoInstaller } from "./calico.js";
import { nodeIps, podCidrs } from "./families.js";
import { cgroupRoot, nodeName, paths, podBridge, primaryNetwork, startupTaint } from "./layout.js";
import { currentLeg, minorOf } from "./leg.js";
import { type Identity, identities, kubeconfigOf } from "./pki.js";
import type { DaemonSpec } from "./processes.js";

/** kubelet's cgroup root in every hierarchy, each level of it (kubelet wants it there); a new cpuset gets its parent's CPUs and memory nodes. */
function makeCgroupRoot(root: string): void {
  const levels = root.split("/").filter(Boolean);
  for (const controller of readdirSync("/sys/fs/cgroup")) {
    if (!existsSync(join("/sys/fs/cgroup", controller, "cgroup.procs"))) continue;
    levels.forEach((_, depth) => {
      const dir = join("/sys/fs/cgroup", controller, ...levels.slice(0, depth + 1));
      mkdirSync(dir, { recursive: true });
      if (controller === "cpuset")
        for (const file of ["cpuset.cpus", "cpuset.mems"]) writeFileSync(join(dir, file), readFileSync(join(dir, "..", file)));
    });
  }
}

/** What sets one node's kubelet and kube-proxy apart: the single node's, or one of several (node-layout.ts). */
export interface NodeSite {
  name: string;
  ips: string[];
  cgroupRoot: string;
  /** kubelet's identity: its client and serving certificate. */
  kubelet: Identity;
  runtimeEndpoint: string;
  /** kubelet's --root-dir as the node sees it. */
  kubeletRoot: string;
  /** Where the node's config files go. */
  dir: string;
  /** The pods of every node, which kube-proxy does not masquerade. */
  clusterCidrs: string[];
  /** The argv that runs a command on the node, and the daemon's name suffix ("" for the single node). */
  wrap: (argv: string[]) => string[];
  suffix: string;
}

export const singleNode = (): NodeSite => ({
  name: nodeName,
  ips: nodeIps(),
  cgroupRoot,
  kubelet: identities.kubelet,
  runtimeEndpoint: `unix://${paths.containerdSocket}`,
  kubeletRoot: paths.kubeletRoot,
  dir: paths.dir,
  clusterCidrs: podCidrs(),
  wrap: (argv) => argv,
  suffix: "",
});

function daemon(name: string, argv: string[], node: NodeSite): DaemonSpec {
  const [command, ...args] = node.wrap(argv);
  return { name: `${name}${node.suffix}`, command: command!, args };
}

/**
 * The kubelet: registers the node with meshcni's startup taint, cgroupfs under a cgroup
 * root of its own, cgroup v1 allowed (this machine's hierarchy; the setting came with 1.31), no eviction or image GC
 * (a test machine's disk is no signal), webhook authentication and authorization.
 */
export function kubeletSpec(binary: string, version: string, node = singleNode()): DaemonSpec {
  makeCgroupRoot(node.cgroupRoot);
  const pki = paths.pki;
  const config = join(node.dir, "kubelet.yaml");
  writeFileSync(
    config,
    `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${node.ips[0]}
healthzBindAddress: 127.0.0.1
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "${pki}/ca.crt"}
authorization: {mode: Webhook}
tlsCertFile: "${pki}/${node.kubelet.stem}.crt"
tlsPrivateKeyFile: "${pki}/${node.kubelet.stem}.key"
containerRuntimeEndpoint: "${node.runtimeEndpoint}"
cgroupDriver: cgroupfs
cgroupRoot: ${node.cgroupRoot}
${minorOf(version) >= 31 ? "failCgroupV1: false\n" : ""}failSwapOn: false
resolvConf: ""
registerWithTaints:
  - {key: ${startupTaint}, effect: NoSchedule}
evictionHard: {memory.available: "0%", nodefs.available: "0%", imagefs.available: "0%", nodefs.inodesFree: "0%"}
imageGCHighThresholdPercent: 100
serializeImagePulls: false
`,
  );
  const args = [
    `--config=${config}`,
    `--kubeconfig=${kubeconfigOf(node.kubelet)}`,
    `--root-dir=${node.kubeletRoot}`,
    `--hostname-override=${node.name}`,
    `--node-ip=${node.ips.join(",")}`,
  ];
  return daemon("kubelet", [binary, ...args], node);
}

/** kube-proxy in iptables mode: the `kubernetes` Service reachable at its ClusterIP from the host network. */
export function kubeProxySpec(binary: string, node = singleNode()): DaemonSpec {
  const config = join(node.dir, "kube-proxy.yaml");
  writeFileSync(
    config,
    `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: "${kubeconfigOf(identities.proxy)}"}
mode: iptables
clusterCIDR: ${node.clusterCidrs.join(",")}
hostnameOverride: ${node.name}
bindAddress: ${node.ips[0]}
nodePortAddresses: ${JSON.stringify(node.ips.map((ip) => `${ip}/${ip.includes(":") ? 128 : 32}`))}
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack: {maxPerCore: 0}
`,
  );
  return daemon("kube-proxy", [binary, `--config=${config}`], node);
}

/**
 * The primary CNI's conflist, as a cluster's network add-on writes it: bridge (the pods'
 * gateway, no masquerade), host-local, portmap.
 */
export function primaryConflist(cniVersion = "1.0.0", pods = { cidrs: podCidrs(), ipamDir: paths.ipamDir }): Record<string, unknown> {
  return {
    cniVersion,
    name: primaryNetwork,
    plugins: [
      {
        type: "bridge",
        bridge: podBridge,
        isGateway: true,
        isDefaultGateway: true,
        ipMasq: false,
        hairpinMode: true,
        // One range set per family: host-local gives the pod one address of each.
        ipam: { type: "host-local", ranges: pods.cidrs.map((subnet) => [{ subnet }]), dataDir: pods.ipamDir },
      },
      { type: "portmap", capabilities: { portMappings: true } },
    ],
  };
}

const calicoPrimary = currentLeg().primary === "calico";
export const primaryConflistPath = join(paths.cniConfDir, calicoPrimary ? calicoConflistName : "10-primary.conflist");
/** The plugin types the primary's own conflist chains (meshcni goes after them). */
export const primaryTypes = calicoPrimary ? ["calico", "portmap"] : ["bridge", "portmap"];
/** The files the primary keeps in the net dir: its conflist, and Calico's plugin kubeconfig. */
export const primaryNetDirFiles = calicoPrimary ? [calicoConflistName, basename(calicoKubeconfigPath)] : [basename(primaryConflistPath)];

/** Writes the primary's conflist as an add-on would (in place: the rewrite a Calico restart makes). */
export function writePrimaryConflist(cniVersion?: string): void {
  mkdirSync(dirname(primaryConflistPath), { recursive: true });
  writeFileSync(primaryConflistPath, `${JSON.stringify(primaryConflist(cniVersion), null, 2)}\n`);
}

/** The primary writes its conflist again, in place: Calico's installer as when calico-node restarts; resolves with the time the write ended (ms since epoch). */
export async function rewritePrimaryConflist(): Promise<number> {
  if (calicoPrimary) return runCalicoInstaller();
  writePrimaryConflist();
  return Date.now();
}

type PluginEntry = Record<string, unknown> & { type: string };

/**
 * The chain the primary's conflist makes now, in order, as libcni 1.3 loads it (this node's,
 * or another's at its path as the host sees it): its own plugins, then the drop-ins in
 * `<its dir>/<its name>/*.conf` by name, unless it sets loadOnlyInlinedPlugins.
 */
export function chainedPlugins(path = primaryConflistPath): PluginEntry[] {
  const conflist = JSON.parse(readFileSync(path, "utf8")) as { name: string; plugins: PluginEntry[]; loadOnlyInlinedPlugins?: unknown };
  const dropInDir = join(dirname(path), conflist.name);
  if (conflist.loadOnlyInlinedPlugins === true || !existsSync(dropInDir)) return conflist.plugins;
  const dropIns = readdirSync(dropInDir)
    .filter((name) => name.endsWith(".conf"))
    .sort()
    .map((name) => JSON.parse(readFileSync(join(dropInDir, name), "utf8")) as PluginEntry);
  return [...conflist.plugins, ...dropIns];
}

/** The plugin types the runtime says it loaded for a new pod's eth0 (its verbose CRI Status): its own word, not the disk's. */
export async function loadedTypes(): Promise<string[]> {
  const runtime = await connectRuntime(paths.containerdSocket);
  try {
    const chain = loadedDefaultChain(await runtime.statusInfo(Date.now() + 3000));
    if ("unknown" in chain) throw new Error(chain.unknown);
    return chain.plugins.map((plugin) => plugin.type);
  } finally {
    runtime.close();
  }
}

/** The plugins the primary's conflist itself holds, drop-ins aside: meshcni writes none of them where the runtime loads drop-ins. */
export const conflistPlugins = (path = primaryConflistPath) =>
  (JSON.parse(readFileSync(path, "utf8")) as { plugins: PluginEntry[] }).plugins;

/** The plugin types the primary's conflist chains now, in order. */
export const chainedTypes = () => chainedPlugins().map((plugin) => plugin.type);
