import { copyFileSync, existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { sleep, until } from "../common.js";
import { applyCalicoObjects, prepareCalicoInstaller, runCalicoInstaller } from "./calico.js";
import { containerdSpec } from "./containerd.js";
import { apiserverSpec, type ControlPlaneOptions, controllerManagerSpec, etcdSpec, schedulerSpec } from "./control-plane.js";
import { prepareHost } from "./host.js";
import { imageArchives } from "./images.js";
import { nodeName, paths } from "./layout.js";
import { currentLeg } from "./leg.js";
import { kubeletSpec, kubeProxySpec, writePrimaryConflist } from "./node.js";
import { nodeIdentity, prepareNodes, severalNodes, upNodes } from "./nodes.js";
import { identities, kubeconfigOf, makePki } from "./pki.js";
import { daemonLog, daemonSpec, runningPid, startDaemon, stopDaemon } from "./processes.js";
import { Steps } from "./steps.js";
import { type Components, components, primaryPlugins, tearDown } from "./teardown.js";

/** What the tests read of a pod. */
export interface PodObject {
  metadata: { name: string; uid: string; deletionTimestamp?: string; labels?: Record<string, string> };
  spec: { nodeName?: string };
  status: { podIP?: string; phase?: string };
}

export interface ClusterOptions extends ControlPlaneOptions {
  /** The primary conflist's cniVersion (1.0.0). */
  cniVersion?: string;
  /** More than one: each node in namespaces of its own (nodes.ts), the bridge primary, IPv4. */
  nodes?: number;
}

/**
 * A single-node Kubernetes on this machine, built here: etcd, kube-apiserver,
 * kube-controller-manager, kube-scheduler, containerd 2 with a primary conflist (bridge,
 * host-local, portmap; or Calico's, by its installer: calico.ts), kubelet (registering with meshcni's startup taint) and kube-proxy.
 * Images are imported, never pulled. up() first removes what a failed run left behind.
 */
export class RealCluster {
  bin!: Components;
  /** The leg this run is (MESHCNI_LEG): its releases, meshcni's backend. */
  readonly leg = currentLeg();

  constructor(readonly options: ClusterOptions = {}) {}

  /** Starts the cluster, step by step; `say` hears each step with its time (npm run cluster -- up prints them). */
  async up(say?: (line: string) => void): Promise<void> {
    const steps = new Steps(say);
    this.bin = await steps.run("components built (build/cluster/components.sh)", [], components);
    await steps.run("what an earlier run left removed", [], () => tearDown(this.bin));
    for (const dir of [paths.dir, paths.cniBinDir, paths.cniConfDir]) mkdirSync(dir, { recursive: true });
    const layouts = severalNodes(this.options.nodes ?? 1, this.leg);
    const several = layouts.length > 0;
    await steps.run("PKI (openssl)", [], () => makePki(layouts.map(nodeIdentity)));
    await steps.run("host prepared (links, routes, sysctls, nftables)", [], async () => {
      await prepareHost();
      if (several) await prepareNodes();
    });
    if (!several)
      await steps.run("CNI plugins and the primary conflist", [], async () => {
        if (this.leg.primary === "calico") {
          prepareCalicoInstaller(this.bin);
          await runCalicoInstaller(this.options.cniVersion);
          return;
        }
        for (const plugin of primaryPlugins(this.bin)) {
          copyFileSync(join(this.bin["cni-plugins"], plugin), join(paths.cniBinDir, plugin));
        }
        writePrimaryConflist(this.options.cniVersion);
      });
    const k8s = (command: string) => join(this.bin.kubernetes, command);
    // waitApiserver and waitNodeReady add the apiserver's and kubelet's own lines to their errors.
    await steps.run("etcd and kube-apiserver ready", ["etcd"], async () => {
      startDaemon(etcdSpec(join(this.bin.etcd, "etcd")));
      startDaemon(apiserverSpec(k8s("kube-apiserver"), this.options));
      await this.waitApiserver();
    });
    if (this.leg.primary === "calico") await steps.run("Calico's objects and its plugin's kubeconfig", [], () => applyCalicoObjects(this));
    await steps.run("kube-controller-manager and kube-scheduler started", [], () => {
      startDaemon(controllerManagerSpec(k8s("kube-controller-manager"), this.options));
      startDaemon(schedulerSpec(k8s("kube-scheduler"), this.options));
    });
    if (several) await upNodes(this, steps, layouts);
    else {
      await steps.run("containerd answering on its socket", ["containerd"], async () => {
        startDaemon(containerdSpec(this.bin.containerd, this.leg.containerd));
        await until(() => existsSync(paths.containerdSocket), 30_000, 50);
      });
      await steps.run("images imported (pause, the probe, meshcni)", ["containerd"], async () => {
        for (const archive of await imageArchives()) await this.ctr("images", "import", "--all-platforms", archive);
      });
      await steps.run("kubelet and kube-proxy: the node Ready", ["kube-proxy", "containerd"], async () => {
        startDaemon(kubeletSpec(k8s("kubelet"), this.leg.kubernetes));
        startDaemon(kubeProxySpec(k8s("kube-proxy")));
        await this.waitNodeReady();
      });
    }
    // The controller manager makes each namespace's default ServiceAccount: no pod is admitted before it.
    const defaultServiceAccount = () =>
      this.kubectl(["get", "serviceaccount", "default"]).then(
        () => true,
        () => false,
      );
    await steps.run("the default ServiceAccount made", ["kube-controller-manager"], () => until(defaultServiceAccount, 60_000, 250));
    say?.(`up in ${steps.total()}`);
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

  /**
   * What `probe connect <target>` run in a pod's container answered: the line of whoever
   * accepted the connection ("<banner> dst=<original destination> src=<peer>"), or "error: …".
   */
  async connect(pod: string, target: string, options: { namespace?: string; container?: string } = {}): Promise<string> {
    const args = ["exec", "-n", options.namespace ?? "default", pod, "-c", options.container ?? "app", "--", "/probe", "connect", target];
    return this.kubectl(args).catch((error: Error) => `error: ${error.message}`);
  }

  /** A pod's IP, once it has one. */
  async podIp(pod: string, namespace = "default"): Promise<string> {
    return (await this.runningPod(["pod", pod], namespace)).status.podIP!;
  }

  /** The running pod a label selector names (one not being deleted), once it has an IP. */
  async runningPod(what: string[], namespace = "default"): Promise<PodObject> {
    let found: PodObject | undefined;
    await until(
      async () => {
        const answer = await this.get<PodObject | { items: PodObject[] }>(...what, "-n", namespace);
        const pods = "items" in answer ? answer.items : [answer];
        found = pods.find((pod) => !pod.metadata.deletionTimestamp && pod.status.phase === "Running" && pod.status.podIP);
        return found !== undefined;
      },
      60_000,
      250,
    );
    return found!;
  }

  podIpOf = async (selector: string, namespace = "default") => (await this.runningPod(["pods", "-l", selector], namespace)).status.podIP!;
  podNameOf = async (selector: string, namespace = "default") => (await this.runningPod(["pods", "-l", selector], namespace)).metadata.name;

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

  async waitNodeReady(timeoutMs = 90_000, name = nodeName, kubelet = "kubelet"): Promise<void> {
    await until(
      async () => {
        if (!runningPid(kubelet)) throw new Error(`${kubelet} exited`);
        const node = await this.get<{ status?: { conditions?: Array<{ type: string; status: string }> } }>("node", name).catch(
          () => undefined,
        );
        return node?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
      },
      timeoutMs,
      500,
    ).catch((error: unknown) => {
      throw new Error(`node ${name} not Ready: ${error}\n${daemonLog(kubelet)}`);
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
