import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { paths } from "./layout.js";
import { inNode, type NodeLayout, nodeContainerd } from "./node-layout.js";
import type { DaemonSpec } from "./processes.js";

export const pauseImage = "meshcni.test/pause:3.10.1";

/** Where a containerd keeps its files and finds the CNI's, as paths it sees (a node's own mount namespace has its own). */
export interface ContainerdSite {
  dir: string;
  socket: string;
  cniBinDir: string;
  cniConfDir: string;
  /**
   * Pod netns under containerd's state dir (the single node: its own dir, where teardown
   * finds them), or in /var/run/netns (a node of several: its own /run).
   */
  netnsUnderState: boolean;
}

/** The single node's: everything under the cluster dir. */
export const clusterContainerd: ContainerdSite = {
  dir: paths.containerd,
  socket: paths.containerdSocket,
  cniBinDir: paths.cniBinDir,
  cniConfDir: paths.cniConfDir,
  netnsUnderState: true,
};

/** What every containerd config here says, in either version's words: its dirs, runc without systemd, the CNI dirs. */
export function containerdConfig(version: string, site: ContainerdSite): string {
  const { dir } = site;
  const head = `root = "${dir}/root"
state = "${dir}/state"

[grpc]
  address = "${site.socket}"

[ttrpc]
  address = "${site.socket}.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "${dir}/opt"
`;
  const runc = (table: string) => `  [${table}.containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [${table}.containerd.runtimes.runc.options]
      BinaryName = "/usr/sbin/runc"
      Root = "${dir}/runc"
      SystemdCgroup = false`;
  // containerd 1.x: config version 2, one CRI plugin, a single CNI bin_dir.
  if (version.startsWith("v1.")) {
    const cri = `plugins."io.containerd.grpc.v1.cri"`;
    return `version = 2
${head}
[${cri}]
  sandbox_image = "${pauseImage}"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = ${site.netnsUnderState}
  [${cri}.containerd]
    snapshotter = "overlayfs"
${runc(cri)}
  [${cri}.cni]
    bin_dir = "${site.cniBinDir}"
    conf_dir = "${site.cniConfDir}"
`;
  }
  const runtime = `plugins.'io.containerd.cri.v1.runtime'`;
  return `version = 3
${head}
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "${pauseImage}"

[${runtime}]
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = ${site.netnsUnderState}
${runc(runtime)}
  [${runtime}.cni]
    bin_dirs = ["${site.cniBinDir}"]
    conf_dir = "${site.cniConfDir}"
`;
}

/**
 * containerd with its CRI (config version 3 for 2.x, 2 for 1.x): everything under the
 * cluster dir, pod netns under its state dir, Debian's runc without systemd, the sandbox
 * image built here, and oom_score_adj never lowered (this machine does not grant CAP_SYS_RESOURCE).
 */
export function containerdSpec(binDir: string, version: string): DaemonSpec {
  mkdirSync(clusterContainerd.dir, { recursive: true });
  const config = join(clusterContainerd.dir, "config.toml");
  writeFileSync(config, containerdConfig(version, clusterContainerd));
  // The shim is found on PATH, beside containerd.
  return {
    name: "containerd",
    command: join(binDir, "containerd"),
    args: ["--config", config],
    env: { PATH: `${binDir}:${process.env.PATH}` },
  };
}

/** A node's containerd (one of several), started in the node's namespaces, its config in its own dir. */
export function nodeContainerdSpec(binDir: string, version: string, layout: NodeLayout): DaemonSpec {
  const site = nodeContainerd(layout);
  mkdirSync(site.dir, { recursive: true });
  const config = join(site.dir, "config.toml");
  writeFileSync(config, containerdConfig(version, site));
  const [command, ...args] = inNode(layout, [join(binDir, "containerd"), "--config", config]);
  return { name: `containerd@${layout.name}`, command: command!, args, env: { PATH: `${binDir}:${process.env.PATH}` } };
}
