import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { writeOciArchive } from "../../../build/oci.js";
import { sleep } from "../common.js";
import { removeCgroups, unmountUnder } from "../leftovers.js";
import { projectRoot } from "../paths.js";
import { CriClient, type SandboxConfig } from "./client.js";

const debianPlugins = "/usr/lib/cni";
const pauseSource = join(import.meta.dirname, "pause.c");
const pauseBinary = join(projectRoot, ".cache/pause");
export const pauseImage = "meshcni.test/pause:1";

/** A running sandbox: its id, its IP, the netns the runtime made and the one its pause process is in. */
export interface Sandbox {
  id: string;
  ip: string;
  /** The netns path the runtime passed to CNI. */
  netns: string;
  /** The pause process's netns: where the pod really lives. */
  podNetns: string;
}

/** The static pause program, built here (gcc -static) once and kept in .cache. */
async function buildPause(): Promise<string> {
  if (!existsSync(pauseBinary) || statSync(pauseBinary).mtimeMs < statSync(pauseSource).mtimeMs) {
    mkdirSync(join(projectRoot, ".cache"), { recursive: true });
    await execa("gcc", ["-static", "-Os", "-s", "-o", pauseBinary, pauseSource]);
  }
  return pauseBinary;
}

/**
 * containerd with its CRI plugin, as kubelet's runtime, all of it under a temp dir of its
 * own (config, root, state, socket, runc root, opt): never the system's. The CNI conf
 * and bin dirs are the caller's (a TestNetwork's or an agent's); the bin dir gets
 * Debian's bridge, host-local and loopback beside meshcni. stop() removes sandboxes,
 * the daemon, its shims, mounts, cgroups, CNI cache entries and the dir, even after a
 * failure.
 */
export class ContainerdNode {
  readonly id = randomBytes(3).toString("hex");
  readonly cgroupParent = `/meshcni-test-${this.id}`;
  readonly dir = mkdtempSync(join(tmpdir(), "meshcni-containerd-"));
  readonly socket = join(this.dir, "containerd.sock");
  readonly sandboxes = new Set<string>();
  private child: ChildProcess | undefined;
  private output = "";
  private clientMade: CriClient | undefined;

  constructor(readonly cni: { confDir: string; binDir: string }) {}

  get client(): CriClient {
    this.clientMade ??= new CriClient(this.socket);
    return this.clientMade;
  }

  /** What containerd logged, for failure messages. */
  get log(): string {
    return this.output;
  }

  async start(): Promise<void> {
    for (const plugin of ["bridge", "host-local", "loopback"]) {
      const link = join(this.cni.binDir, plugin);
      if (!existsSync(link)) symlinkSync(join(debianPlugins, plugin), link);
    }
    const config = join(this.dir, "config.toml");
    writeFileSync(config, this.config());
    const child = spawn("containerd", ["--config", config], { stdio: ["ignore", "pipe", "pipe"] });
    this.child = child;
    child.stdout!.on("data", (chunk: Buffer) => (this.output += chunk.toString()));
    child.stderr!.on("data", (chunk: Buffer) => (this.output += chunk.toString()));
    const started = performance.now();
    for (;;) {
      if (child.exitCode !== null) throw new Error(`containerd exited with ${child.exitCode}:\n${this.output}`);
      if (
        existsSync(this.socket) &&
        (await this.client.version().then(
          () => true,
          () => false,
        ))
      )
        break;
      if (performance.now() - started > 15_000) throw new Error(`containerd did not answer in 15 s:\n${this.output}`);
      await sleep(50);
    }
    const archive = join(this.dir, "pause.tar");
    await writeOciArchive(archive, pauseImage, [
      {
        os: "linux",
        architecture: process.arch === "arm64" ? "arm64" : "amd64",
        entries: [{ path: "pause", source: await buildPause(), mode: 0o755 }],
        config: { Entrypoint: ["/pause"] },
      },
    ]);
    await this.importImage(archive);
  }

  /** Imports an OCI image archive into the CRI's namespace, as a registry pull would. */
  async importImage(archive: string): Promise<void> {
    await execa("ctr", ["--address", this.socket, "--namespace", "k8s.io", "images", "import", "--all-platforms", archive]);
  }

  private config(): string {
    const dir = this.dir;
    return `version = 2
root = "${dir}/root"
state = "${dir}/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]

[grpc]
  address = "${this.socket}"

[ttrpc]
  address = "${this.socket}.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "${dir}/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${pauseImage}"
  # Lowering oom_score_adj needs CAP_SYS_RESOURCE, which this machine does not grant.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "${this.cni.binDir}"
    conf_dir = "${this.cni.confDir}"

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = "${dir}/runc"
`;
  }

  /** A sandbox config for a pod, as kubelet would send it. */
  sandboxConfig(namespace: string, name: string, uid = `uid-${namespace}-${name}`): SandboxConfig {
    return {
      metadata: { name, uid, namespace, attempt: 0 },
      hostname: name,
      // As kubelet labels every sandbox: how a runtime client finds a pod's.
      labels: { "io.kubernetes.pod.name": name, "io.kubernetes.pod.namespace": namespace, "io.kubernetes.pod.uid": uid },
      logDirectory: join(this.dir, "logs", uid),
      linux: { cgroupParent: this.cgroupParent, securityContext: { namespaceOptions: { network: "POD", pid: "CONTAINER" } } },
    };
  }

  /** RunPodSandbox, then what the runtime says of it: READY, its IP, its netns. */
  async runPod(config: SandboxConfig): Promise<Sandbox> {
    const id = await this.client.runPodSandbox(config);
    this.sandboxes.add(id);
    const { status, info } = await this.client.podSandboxStatus(id);
    if (status.state !== "SANDBOX_READY") throw new Error(`sandbox ${id} is ${status.state}`);
    const verbose = JSON.parse(info.info ?? "{}") as {
      pid: number;
      runtimeSpec: { linux: { namespaces: Array<{ type: string; path?: string }> } };
    };
    const netns = verbose.runtimeSpec.linux.namespaces.find((namespace) => namespace.type === "network")?.path ?? "";
    return { id, ip: status.network?.ip ?? "", netns, podNetns: `/proc/${verbose.pid}/ns/net` };
  }

  /** StopPodSandbox (the runtime's first DEL), then RemovePodSandbox (its second). */
  async removePod(id: string): Promise<void> {
    await this.client.stopPodSandbox(id);
    await this.client.removePodSandbox(id);
    this.sandboxes.delete(id);
  }

  async stop(): Promise<void> {
    if (this.child && this.child.exitCode === null) {
      for (const id of [...this.sandboxes]) await this.removePod(id).catch(() => undefined);
    }
    this.clientMade?.close();
    if (this.child && this.child.exitCode === null) {
      const exited = new Promise((resolve) => this.child!.once("exit", resolve));
      this.child.kill("SIGTERM");
      await Promise.race([exited, sleep(5000).then(() => this.child!.kill("SIGKILL"))]);
    }
    // Shims outlive containerd: find ours by the address they were given.
    await execa("pkill", ["-9", "-f", `containerd-shim-runc-v2 .*-address ${this.socket}`], { reject: false });
    await sleep(100);
    await unmountUnder(this.dir);
    rmSync(this.dir, { recursive: true, force: true });
    await removeCgroups(this.cgroupParent);
  }
}
