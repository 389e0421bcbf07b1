import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { execa } from "execa";
import { type FakeApiServer, type PodOptions, podObject } from "../api/server.js";
import { inNetnsCommand, podArgs } from "../common.js";
import { FakeCriRuntime } from "../cri/fake-runtime.js";

export const projectRoot = resolve(import.meta.dirname, "../../..");
export const meshcniBinary = join(projectRoot, "build/meshcni");
export const cnitoolBinary = join(projectRoot, ".cache/bin/cnitool");
/** Prometheus's promtool, from Debian's prometheus package (build/prepare.sh). */
export const promtoolBinary = join(projectRoot, ".cache/bin/promtool");
const tcpHelper = join(import.meta.dirname, "tcp.mjs");
export const debianPlugins = "/usr/lib/cni";
const cniCacheResults = "/var/lib/cni/results";

export interface CniOutcome {
  exitCode: number;
  stdout: string;
  stderr: string;
  json: Record<string, unknown> | undefined;
}

export function outcome(result: { exitCode?: number | undefined; stdout: unknown; stderr: unknown }): CniOutcome {
  const stdout = String(result.stdout);
  let json: Record<string, unknown> | undefined;
  try {
    json = stdout.trim() ? JSON.parse(stdout) : undefined;
  } catch {
    json = undefined;
  }
  return { exitCode: result.exitCode ?? -1, stdout, stderr: String(result.stderr), json };
}

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
    const prefix = this.subnet.replace(/\.0\/24$/, "");
    return {
      cniVersion,
      name: network,
      plugins: [
        {
          type: "bridge",
          bridge: this.bridge,
          isGateway: false,
          ipMasq: false,
          ipam: {
            type: "host-local",
            ranges: [
              [{ subnet: this.subnet, rangeStart: `${prefix}.${block * 32 + 2}`, rangeEnd: `${prefix}.${block * 32 + 31}` }],
              ...(this.ipv6Subnet
                ? [
                    [
                      {
                        subnet: this.ipv6Subnet,
                        rangeStart: `${this.ipv6Subnet.replace("::/64", "")}::${block}:2`,
                        rangeEnd: `${this.ipv6Subnet.replace("::/64", "")}::${block}:ff`,
                      },
                    ],
                  ]
                : []),
            ],
            dataDir: join(this.dir, "ipam"),
          },
        },
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

  /**
   * Starts a pod as a kubelet would: its object in the API first (the plugin reads it
   * during ADD), a netns, cnitool ADD through `network`, then the object again with
   * its node and IP, as the API shows a running pod. A meshed pod unless said.
   */
  /** The node's container runtime, as its CRI socket answers: startPod's sandboxes. */
  readonly runtime = new FakeCriRuntime();
  private runtimeStarted: Promise<void> | undefined;

  /** The runtime's CRI socket (started at first use), for --cri-socket. */
  async criSocket(): Promise<string> {
    this.runtimeStarted ??= this.runtime.start();
    await this.runtimeStarted;
    return this.runtime.socket;
  }

  /** Starts a pod as kubelet would: in the API, in a netns the runtime knows as its sandbox's, through a CNI network. */
  async startPod(
    api: FakeApiServer,
    pod: { namespace: string; name: string; network: string; node?: string; options?: PodOptions; dirs?: { conf: string; bin: string } },
  ): Promise<{ netns: string; ip: string }> {
    const options: PodOptions = { proxy: "container", ...pod.options };
    const object = podObject(pod.namespace, pod.name, options);
    api.addPod(object);
    const netns = await this.addNetns(pod.name);
    this.runtime.sandboxes.set(String(object.metadata?.uid), this.netnsPath(netns));
    const added = await this.cnitool("add", pod.network, netns, podArgs(pod.namespace, pod.name), pod.dirs);
    if (added.exitCode !== 0) throw new Error(`ADD of ${pod.namespace}/${pod.name} failed: ${added.stdout}${added.stderr}`);
    const ip = TestNetwork.address(added);
    api.addPod(podObject(pod.namespace, pod.name, { ...options, ...(pod.node ? { nodeName: pod.node } : {}), podIP: ip }));
    return { netns, ip };
  }

  /** The first address of a family a cnitool ADD result gave (IPv4 unless asked), without its prefix. */
  static address(result: CniOutcome, family: "ipv4" | "ipv6" = "ipv4"): string {
    const ips = (result.json?.ips ?? []) as Array<{ address: string }>;
    const address = ips.find((ip) => ip.address.includes(":") === (family === "ipv6"))?.address;
    if (!address) throw new Error(`no ${family} address in ADD result: ${result.stdout} ${result.stderr}`);
    return address.split("/")[0]!;
  }

  /** Starts TCP listeners in a netns, each answering its label. */
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

/** The env a runtime gives the plugin for an ADD of a pod's eth0; `extra` overrides (CNI_COMMAND…). */
export function pluginEnv(
  netnsPath: string,
  containerId: string,
  args: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return { CNI_COMMAND: "ADD", CNI_CONTAINERID: containerId, CNI_NETNS: netnsPath, CNI_IFNAME: "eth0", CNI_ARGS: args, ...extra };
}

/** Runs the compiled plugin the way a runtime does: env and stdin in, stdout and exit code out. */
export async function invokePlugin(env: Record<string, string>, stdin: string | object): Promise<CniOutcome> {
  return outcome(await startPlugin(env, stdin));
}

/**
 * Starts the compiled plugin and returns its process (to kill it midway, say). With
 * `inNetns` it runs inside that netns, as if it were the host's; `wrap` runs it under
 * another command (`unshare --pid …`).
 */
export function startPlugin(env: Record<string, string>, stdin: string | object, options: { inNetns?: string; wrap?: string[] } = {}) {
  const [command, ...args] = [...(options.inNetns ? ["ip", "netns", "exec", options.inNetns] : (options.wrap ?? [])), meshcniBinary];
  return execa(command!, args, {
    env: { PATH: process.env.PATH ?? "", ...env },
    extendEnv: false,
    input: typeof stdin === "string" ? stdin : JSON.stringify(stdin),
    reject: false,
  });
}

/** Runs the compiled plugin inside a netns, as if that were the host's. */
export async function invokePluginIn(netns: string, env: Record<string, string>, stdin: string | object): Promise<CniOutcome> {
  return outcome(await startPlugin(env, stdin, { inNetns: netns }));
}

/** The nat table of a netns (a name or a path) as one backend's iptables-save prints it. */
export async function natRules(netns: string, backend: "nft" | "legacy", family: "ipv4" | "ipv6" = "ipv4"): Promise<string[]> {
  const binary = `${family === "ipv6" ? "ip6tables" : "iptables"}-${backend}-save`;
  const [command, ...prefix] = inNetnsCommand(netns);
  const { stdout } = await execa(command!, [...prefix, binary, "-t", "nat"]);
  return String(stdout)
    .split("\n")
    .filter((line) => line.startsWith("-A ") || line.startsWith(":PROXY"));
}
