import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { paths } from "./layout.js";
import type { DaemonSpec } from "./processes.js";

export const pauseImage = "meshcni.test/pause:3.10.1";

/** What every containerd config here says, in either version's words: its dirs, runc without systemd, the CNI dirs. */
function containerdConfig(version: string, dir: string): string {
  const head = `root = "${dir}/root"
state = "${dir}/state"

[grpc]
  address = "${paths.containerdSocket}"

[ttrpc]
  address = "${paths.containerdSocket}.ttrpc"

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
  netns_mounts_under_state_dir = true
  [${cri}.containerd]
    snapshotter = "overlayfs"
${runc(cri)}
  [${cri}.cni]
    bin_dir = "${paths.cniBinDir}"
    conf_dir = "${paths.cniConfDir}"
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
  netns_mounts_under_state_dir = true
${runc(runtime)}
  [${runtime}.cni]
    bin_dirs = ["${paths.cniBinDir}"]
    conf_dir = "${paths.cniConfDir}"
`;
}

/**
 * containerd with its CRI (config version 3 for 2.x, 2 for 1.x): everything under the
 * cluster dir, pod netns under its state dir, Debian's runc without systemd, the sandbox
 * image built here, and oom_score_adj never lowered (this machine does not grant CAP_SYS_RESOURCE).
 */
export function containerdSpec(binDir: string, version: string): DaemonSpec {
  const dir = paths.containerd;
  mkdirSync(dir, { recursive: true });
  const config = join(dir, "config.toml");
  writeFileSync(config, containerdConfig(version, dir));
  // The shim is found on PATH, beside containerd.
  return {
    name: "containerd",
    command: join(binDir, "containerd"),
    args: ["--config", config],
    env: { PATH: `${binDir}:${process.env.PATH}` },
  };
}
