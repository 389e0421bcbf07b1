import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { cgroupRoot, nodeIp, nodeName, paths, podBridge, podCidr, primaryNetwork, startupTaint } from "./layout.js";
import { identities, kubeconfigOf } from "./pki.js";
import type { DaemonSpec } from "./processes.js";

export const pauseImage = "meshcni.test/pause:3.10.1";

/**
 * containerd 2 with its CRI (config version 3): everything under the cluster dir, pod netns
 * under its state dir, Debian's runc without systemd, the sandbox image built here, and
 * oom_score_adj never lowered (this machine does not grant CAP_SYS_RESOURCE).
 */
export function containerdSpec(binDir: string): DaemonSpec {
  const dir = paths.containerd;
  mkdirSync(dir, { recursive: true });
  const config = join(dir, "config.toml");
  writeFileSync(
    config,
    `version = 3
root = "${dir}/root"
state = "${dir}/state"

[grpc]
  address = "${paths.containerdSocket}"

[ttrpc]
  address = "${paths.containerdSocket}.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "${dir}/opt"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "${pauseImage}"

[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
      BinaryName = "/usr/sbin/runc"
      Root = "${dir}/runc"
      SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["${paths.cniBinDir}"]
    conf_dir = "${paths.cniConfDir}"
`,
  );
  // The shim is found on PATH, beside containerd.
  return {
    name: "containerd",
    command: join(binDir, "containerd"),
    args: ["--config", config],
    env: { PATH: `${binDir}:${process.env.PATH}` },
  };
}

/** kubelet's cgroup root in every hierarchy (kubelet wants it there); a new cpuset gets its parent's CPUs and memory nodes. */
function makeCgroupRoot(): void {
  for (const controller of readdirSync("/sys/fs/cgroup")) {
    const dir = join("/sys/fs/cgroup", controller, cgroupRoot);
    if (!existsSync(join("/sys/fs/cgroup", controller, "cgroup.procs"))) continue;
    mkdirSync(dir, { recursive: true });
    if (controller === "cpuset")
      for (const file of ["cpuset.cpus", "cpuset.mems"]) writeFileSync(join(dir, file), readFileSync(join(dir, "..", file)));
  }
}

/**
 * The kubelet: registers the node with meshcni's startup taint, cgroupfs under a cgroup
 * root of its own, cgroup v1 allowed (this machine's hierarchy), no eviction or image GC
 * (a test machine's disk is no signal), webhook authentication and authorization.
 */
export function kubeletSpec(binary: string): DaemonSpec {
  makeCgroupRoot();
  const pki = paths.pki;
  const config = join(paths.dir, "kubelet.yaml");
  writeFileSync(
    config,
    `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${nodeIp}
healthzBindAddress: 127.0.0.1
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "${pki}/ca.crt"}
authorization: {mode: Webhook}
tlsCertFile: "${pki}/${identities.kubelet.stem}.crt"
tlsPrivateKeyFile: "${pki}/${identities.kubelet.stem}.key"
containerRuntimeEndpoint: "unix://${paths.containerdSocket}"
cgroupDriver: cgroupfs
cgroupRoot: ${cgroupRoot}
failCgroupV1: false
failSwapOn: false
resolvConf: ""
registerWithTaints:
  - {key: ${startupTaint}, effect: NoSchedule}
evictionHard: {memory.available: "0%", nodefs.available: "0%", imagefs.available: "0%", nodefs.inodesFree: "0%"}
imageGCHighThresholdPercent: 100
serializeImagePulls: false
`,
  );
  return {
    name: "kubelet",
    command: binary,
    args: [
      `--config=${config}`,
      `--kubeconfig=${kubeconfigOf(identities.kubelet)}`,
      `--root-dir=${paths.kubeletRoot}`,
      `--hostname-override=${nodeName}`,
      `--node-ip=${nodeIp}`,
    ],
  };
}

/** kube-proxy in iptables mode: the `kubernetes` Service reachable at its ClusterIP from the host network. */
export function kubeProxySpec(binary: string): DaemonSpec {
  const config = join(paths.dir, "kube-proxy.yaml");
  writeFileSync(
    config,
    `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: "${kubeconfigOf(identities.proxy)}"}
mode: iptables
clusterCIDR: ${podCidr}
hostnameOverride: ${nodeName}
bindAddress: ${nodeIp}
nodePortAddresses: ["${nodeIp}/32"]
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack: {maxPerCore: 0}
`,
  );
  return { name: "kube-proxy", command: binary, args: [`--config=${config}`] };
}

/**
 * The primary CNI's conflist, as a cluster's network add-on writes it: bridge (the pods'
 * gateway, no masquerade), host-local, portmap.
 */
export function primaryConflist(cniVersion = "1.0.0"): Record<string, unknown> {
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
        ipam: { type: "host-local", ranges: [[{ subnet: podCidr }]], dataDir: paths.ipamDir },
      },
      { type: "portmap", capabilities: { portMappings: true } },
    ],
  };
}

export const primaryConflistPath = join(paths.cniConfDir, "10-primary.conflist");

/** Writes the primary's conflist as an add-on would (in place: the rewrite a Calico restart makes). */
export function writePrimaryConflist(cniVersion?: string): void {
  mkdirSync(dirname(primaryConflistPath), { recursive: true });
  writeFileSync(primaryConflistPath, `${JSON.stringify(primaryConflist(cniVersion), null, 2)}\n`);
}

/** The plugin types the primary's conflist chains now, in order. */
export const chainedTypes = () =>
  (JSON.parse(readFileSync(primaryConflistPath, "utf8")) as { plugins: Array<{ type: string }> }).plugins.map((plugin) => plugin.type);
