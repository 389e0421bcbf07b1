import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { sleep, until } from "../common.js";
import { CriClient } from "../cri/client.js";
import { projectRoot } from "../network.js";
import { apiserverSpec, type ControlPlaneOptions, controllerManagerSpec, etcdSpec, schedulerSpec } from "./control-plane.js";
import { prepareHost, removeNodeCgroups, restoreHost, unmountUnder } from "./host.js";
import { imageArchives } from "./images.js";
import { nodeName, paths } from "./layout.js";
import { containerdSpec, kubeletSpec, kubeProxySpec, writePrimaryConflist } from "./node.js";
import { identities, kubeconfigOf, makePki } from "./pki.js";
import { daemonLog, daemonSpec, recordedDaemons, runningPid, startDaemon, stopDaemon } from "./processes.js";

/** Where components.sh put each component's binaries. */
export interface Components {
  kubernetes: string;
  etcd: string;
  containerd: string;
  "cni-plugins": string;
}

export interface ClusterOptions extends ControlPlaneOptions {
  /** The primary conflist's cniVersion (1.0.0). */
  cniVersion?: string;
}

/** The binaries, built from the Go module proxy (or a user's, MESHCNI_CLUSTER_BIN) by build/cluster/components.sh. */
export async function components(): Promise<Components> {
  const { stdout } = await execa("bash", [join(projectRoot, "build/cluster/components.sh")], { stderr: "inherit" });
  return Object.fromEntries(stdout.split("\n").map((line) => line.split("=", 2))) as unknown as Components;
}

/** The order daemons stop in: kubelet first (it would restart what is removed), etcd last. */
const stopOrder = ["kubelet", "kube-proxy", "kube-scheduler", "kube-controller-manager", "containerd", "kube-apiserver", "etcd"];

/** Removes every sandbox through the CRI, as kubelet would (each DEL runs through the chain), while containerd still runs. */
async function removeSandboxes(): Promise<void> {
  if (!runningPid("containerd")) return;
  const client = new CriClient(paths.containerdSocket);
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
  await stopDaemon("kubelet");
  await removeSandboxes();
  for (const name of [...stopOrder, ...recordedDaemons()]) await stopDaemon(name);
  // Shims outlive containerd: find them by the address they were given.
  await execa("pkill", ["-9", "-f", `containerd-shim-runc-v2 .*-address ${paths.containerdSocket}`], { reject: false });
  await removeNodeCgroups();
  await unmountUnder(paths.dir);
  if (bin) await execa(join(bin.kubernetes, "kube-proxy"), ["--cleanup"], { reject: false });
  await restoreHost();
  rmSync(paths.dir, { recursive: true, force: true });
}

/**
 * A single-node Kubernetes on this machine, built here: etcd, kube-apiserver,
 * kube-controller-manager, kube-scheduler, containerd 2 with a primary conflist (bridge,
 * host-local, portmap), kubelet (registering with meshcni's startup taint) and kube-proxy.
 * Images are imported, never pulled. up() first removes what a failed run left behind.
 */
export class RealCluster {
  bin!: Components;

  constructor(readonly options: ClusterOptions = {}) {}

  async up(): Promise<void> {
    this.bin = await components();
    await tearDown(this.bin);
    for (const dir of [paths.dir, paths.cniBinDir, paths.cniConfDir]) mkdirSync(dir, { recursive: true });
    await makePki();
    await prepareHost();
    for (const plugin of readdirSync(this.bin["cni-plugins"]).filter((name) => !name.startsWith("."))) {
      copyFileSync(join(this.bin["cni-plugins"], plugin), join(paths.cniBinDir, plugin));
    }
    writePrimaryConflist(this.options.cniVersion);
    const k8s = (command: string) => join(this.bin.kubernetes, command);
    startDaemon(etcdSpec(join(this.bin.etcd, "etcd")));
    startDaemon(apiserverSpec(k8s("kube-apiserver"), this.options));
    await this.waitApiserver();
    startDaemon(controllerManagerSpec(k8s("kube-controller-manager")));
    startDaemon(schedulerSpec(k8s("kube-scheduler")));
    startDaemon(containerdSpec(this.bin.containerd));
    await until(() => existsSync(paths.containerdSocket), 30_000, 50);
    for (const archive of await imageArchives()) await this.ctr("images", "import", "--all-platforms", archive);
    startDaemon(kubeletSpec(k8s("kubelet")));
    startDaemon(kubeProxySpec(k8s("kube-proxy")));
    await this.waitNodeReady();
  }

  async down(): Promise<void> {
    await tearDown(this.bin);
  }

  /** kubectl as the cluster's admin. */
  async kubectl(args: string[], input?: string): Promise<string> {
    const result = await execa(join(this.bin.kubernetes, "kubectl"), ["--kubeconfig", kubeconfigOf(identities.admin), ...args], {
      ...(input === undefined ? {} : { input }),
      reject: false,
    });
    if (result.exitCode !== 0) throw new Error(`kubectl ${args.join(" ")}: ${result.stderr || result.stdout}`);
    return result.stdout;
  }

  /** kubectl get … -o json, parsed. */
  async get<T = Record<string, unknown>>(...args: string[]): Promise<T> {
    return JSON.parse(await this.kubectl(["get", ...args, "-o", "json"])) as T;
  }

  async ctr(...args: string[]): Promise<string> {
    const { stdout } = await execa(join(this.bin.containerd, "ctr"), [
      "--address",
      paths.containerdSocket,
      "--namespace",
      "k8s.io",
      ...args,
    ]);
    return stdout;
  }

  async waitApiserver(timeoutMs = 60_000): Promise<void> {
    await until(
      () =>
        this.kubectl(["get", "--raw", "/readyz"]).then(
          () => true,
          () => false,
        ),
      timeoutMs,
      250,
    ).catch((error: unknown) => {
      throw new Error(`kube-apiserver not ready: ${error}\n${daemonLog("kube-apiserver")}`);
    });
  }

  async waitNodeReady(timeoutMs = 90_000): Promise<void> {
    await until(
      async () => {
        if (!runningPid("kubelet")) throw new Error("kubelet exited");
        const node = await this.get<{ status?: { conditions?: Array<{ type: string; status: string }> } }>("node", nodeName).catch(
          () => undefined,
        );
        return node?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
      },
      timeoutMs,
      500,
    ).catch((error: unknown) => {
      throw new Error(`node ${nodeName} not Ready: ${error}\n${daemonLog("kubelet")}`);
    });
  }

  /** Stops a daemon (SIGKILL: as a crash) and, unless `downMs` is undefined, starts it again after that long. */
  async restart(name: string, options: { signal?: NodeJS.Signals; downMs?: number } = {}): Promise<void> {
    const spec = daemonSpec(name);
    await stopDaemon(name, options.signal ?? "SIGTERM");
    await sleep(options.downMs ?? 0);
    startDaemon(spec);
  }

  /** Stops a daemon, to be started again with startAgain(). */
  async stop(name: string, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
    await stopDaemon(name, signal);
  }

  startAgain(name: string): void {
    startDaemon(daemonSpec(name));
  }
}
