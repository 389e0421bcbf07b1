import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { type FakeApiServer, type PodOptions, podObject } from "../api/server.js";
import { inNetnsCommand, podArgs } from "../common.js";
import { FakeCriRuntime } from "../cri/fake-runtime.js";
import { cnitoolBinary, debianPlugins, meshcniBinary } from "../paths.js";
import { bridgeEntry } from "./bridge.js";
import { type CniOutcome, outcome, resultAddress } from "./plugin-process.js";

const tcpHelper = join(import.meta.dirname, "tcp.mjs");
const cniCacheResults = "/var/lib/cni/results";

/**
 * A throwaway network on this machine: a Linux bridge with no address and no route out
 * (Debian's bridge + host-local, no gateway, no masquerade), netns "pods" on it, and
 * conflists chaining meshcni. cleanup() removes every netns, link and file it made.
 */
export class TestNetwork {
  readonly id = randomBytes(3).toString("hex");
  readonly bridge = `mcbr${this.id}`;
  private madeDir: string | undefined;
  readonly subnet: string;
  private bridgeReady: Promise<void> | undefined;
  private readonly netnsNames = new Set<string>();
  private readonly networks = new Set<string>();
  private readonly processes = new Set<ChildProcess>();

  /** IPv6 too (dual stack): a second range from fd00:251:<index>::/64, and no DAD delay in the pods. */
  readonly ipv6Subnet: string | undefined;

  /** The cnitool and primary plugins this network runs: Debian's unless given (another libcni's, say). */
  readonly cni: { cnitool: string; plugins: string };

  constructor(subnetIndex: number, options: { ipv6?: boolean; cni?: { cnitool: string; plugins: string } } = {}) {
    this.subnet = `10.251.${subnetIndex}.0/24`;
    this.ipv6Subnet = options.ipv6 ? `fd00:251:${subnetIndex}::/64` : undefined;
    this.cni = options.cni ?? { cnitool: cnitoolBinary, plugins: debianPlugins };
  }

  /** Made on first use, so a suite that never runs leaves nothing behind. */
  get dir(): string {
    if (!this.madeDir) {
      this.madeDir = mkdtempSync(join(tmpdir(), "meshcni-net-"));
      mkdirSync(join(this.madeDir, "net.d"));
      mkdirSync(join(this.madeDir, "bin"));
      // Only the binary, as an installer would put it in the runtime's CNI bin dir.
      symlinkSync(meshcniBinary, join(this.madeDir, "bin", "meshcni"));
    }
    return this.madeDir;
  }

  get confDir(): string {
    return join(this.dir, "net.d");
  }

  get binDir(): string {
    return join(this.dir, "bin");
  }

  /** The plugin's state dir for this network's pods, so tests leave /var/run alone. */
  get stateDir(): string {
    return join(this.dir, "state");
  }

  netnsPath(name: string): string {
    return `/var/run/netns/${name}`;
  }

  /**
   * Makes the bridge before the bridge plugin does, with a fixed MAC: a bridge's own MAC
   * follows its lowest port's, which makes the bridge plugin's CHECK fail once more
   * pods join than the cached ADD result saw.
   */
  async createBridge(): Promise<void> {
    await execa("ip", ["link", "add", "name", this.bridge, "type", "bridge"]);
    await execa("ip", ["link", "set", this.bridge, "address", `02:6d:63:${this.id.replace(/(..)(?!$)/g, "$1:")}`, "up"]);
  }

  async addNetns(label: string): Promise<string> {
    const name = `mc-${this.id}-${label}`;
    await execa("ip", ["netns", "add", name]);
    this.netnsNames.add(name);
    await execa("ip", ["-n", name, "link", "set", "lo", "up"]);
    // Addresses usable at once: duplicate address detection would hold them back ~2 s.
    if (this.ipv6Subnet)
      await execa("ip", ["netns", "exec", name, "sysctl", "-qw", "net.ipv6.conf.default.accept_dad=0", "net.ipv6.conf.all.accept_dad=0"]);
    return name;
  }

  async removeNetns(name: string): Promise<void> {
    await execa("ip", ["netns", "del", name], { reject: false });
    this.netnsNames.delete(name);
  }

  /** The primary CNI's conflist for this network: bridge + host-local (Debian's, unless `cni` said). */
  primaryConflist(network: string, cniVersion = "1.0.0"): { cniVersion: string; name: string; plugins: Array<Record<string, unknown>> } {
    this.networks.add(network);
    // host-local keeps its allocations per network name: each network gets its own range of
    // the subnet, so pods of two networks on this bridge never share an IP (as on a node).
    const block = [...this.networks].indexOf(network);
    if (block > 7) throw new Error("a TestNetwork has ranges for 8 networks");
    return {
      cniVersion,
      name: network,
      plugins: [
        bridgeEntry({ bridge: this.bridge, subnet: this.subnet, ipv6Subnet: this.ipv6Subnet, block, dataDir: join(this.dir, "ipam") }),
      ],
    };
  }

  /** Writes a conflist: bridge + host-local, then meshcni with `meshcni` merged into its entry. */
  writeConflist(network: string, meshcni: Record<string, unknown>, cniVersion = "1.0.0"): string {
    const conflist = this.primaryConflist(network, cniVersion);
    conflist.plugins.push({ type: "meshcni", state_dir: this.stateDir, ...meshcni });
    const path = join(this.confDir, `${network}.conflist`);
    writeFileSync(path, JSON.stringify(conflist, null, 2));
    return path;
  }

  /**
   * Runs cnitool on this network's conflists, or on `dirs` (an installer's net and bin dirs);
   * `wrap` is a command prefix cnitool runs under (e.g. one hiding the host's binaries).
   */
  async cnitool(
    action: "add" | "check" | "del" | "status" | "gc",
    network: string,
    netns: string,
    cniArgs = "",
    dirs = { conf: this.confDir, bin: this.binDir },
    wrap: string[] = [],
  ): Promise<CniOutcome> {
    this.bridgeReady ??= this.createBridge();
    await this.bridgeReady;
    const [command, ...args] = [...wrap, this.cni.cnitool, action, network, this.netnsPath(netns)];
    const result = await execa(command!, args, {
      // As containerd does: Debian's plugins refuse K8S_* keys without IgnoreUnknown.
      env: {
        NETCONFPATH: dirs.conf,
        CNI_PATH: `${dirs.bin}:${this.cni.plugins}`,
        CNI_ARGS: cniArgs && `IgnoreUnknown=1;${cniArgs}`,
        CNI_IFNAME: "eth0",
      },
      reject: false,
    });
    return outcome(result);
  }

  /** The node's container runtime, as its CRI socket answers: startPod's sandboxes. */
  readonly runtime = new FakeCriRuntime();
  private runtimeStarted: Promise<void> | undefined;

  /** The runtime's CRI socket (started at first use), for --cri-socket. */
  async criSocket(): Promise<string> {
    this.runtimeStarted ??= this.runtime.start();
    await this.runtimeStarted;
    return this.runtime.socket;
  }

  /**
   * Starts a pod as kubelet would: its object in the API first (the plugin reads it during
   * ADD), a netns the runtime knows as its sandbox's, cnitool ADD through `network`, then the
   * object again with its IP, as the API shows a running pod. Meshed unless said.
   */
  async startPod(
    api: FakeApiServer,
    pod: { namespace: string; name: string; network: string; node?: string; options?: PodOptions; dirs?: { conf: string; bin: string } },
  ): Promise<{ netns: string; ip: string }> {
    // Bound to its node before its sandbox starts, as the scheduler binds a pod before kubelet runs it.
    const options: PodOptions = { proxy: "container", ...pod.options, ...(pod.node ? { nodeName: pod.node } : {}) };
    const object = podObject(pod.namespace, pod.name, options);
    api.addPod(object);
    const netns = await this.addNetns(pod.name);
    this.runtime.sandboxes.set(String(object.metadata?.uid), this.netnsPath(netns));
    const added = await this.cnitool("add", pod.network, netns, podArgs(pod.namespace, pod.name), pod.dirs);
    if (added.exitCode !== 0) throw new Error(`ADD of ${pod.namespace}/${pod.name} failed: ${added.stdout}${added.stderr}`);
    const ip = resultAddress(added);
    api.addPod(podObject(pod.namespace, pod.name, { ...options, podIP: ip }));
    return { netns, ip };
  }

  /** Starts TCP listeners in a netns (a name or a path), each answering its label. */
  async serve(netns: string, listeners: Record<number, string>): Promise<void> {
    const [command, ...prefix] = inNetnsCommand(netns);
    const args = [...prefix, process.execPath, tcpHelper, "serve", ...Object.entries(listeners).map(([port, label]) => `${port}=${label}`)];
    const child = spawn(command!, args, { stdio: ["ignore", "pipe", "inherit"] });
    this.processes.add(child);
    await new Promise<void>((resolve, reject) => {
      child.stdout!.once("data", () => resolve());
      child.once("exit", (code) => reject(new Error(`listener in ${netns} exited with ${code}`)));
    });
  }

  /** Connects from a netns (as `uid`, and `gid` or the same, when given) and returns what the far end answered. */
  async connect(netns: string, host: string, port: number, uid?: number, gid = uid): Promise<string> {
    const asUser = uid === undefined ? [] : ["setpriv", `--reuid=${uid}`, `--regid=${gid}`, "--clear-groups"];
    const [command, ...prefix] = inNetnsCommand(netns);
    const result = await execa(command!, [...prefix, ...asUser, process.execPath, tcpHelper, "connect", host, String(port)], {
      reject: false,
    });
    return String(result.stdout);
  }

  async cleanup(): Promise<void> {
    if (this.runtimeStarted) await this.runtime.stop();
    for (const child of this.processes) child.kill("SIGKILL");
    for (const name of [...this.netnsNames]) await this.removeNetns(name);
    await execa("ip", ["link", "del", this.bridge], { reject: false });
    if (existsSync(cniCacheResults)) {
      for (const file of readdirSync(cniCacheResults)) {
        if ([...this.networks].some((network) => file.startsWith(`${network}-`))) rmSync(join(cniCacheResults, file), { force: true });
      }
    }
    if (this.madeDir) rmSync(this.madeDir, { recursive: true, force: true });
  }
}
