import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { removeCgroups } from "../leftovers.js";
import { hasIpv6 } from "./families.js";
import {
  agentStateDir,
  cgroupRoot,
  nftTable,
  nodeIp,
  nodeIp6,
  nodeLink,
  paths,
  podBridge,
  primaryNetwork,
  serviceCidr,
  serviceCidr6,
} from "./layout.js";
import { currentLeg } from "./leg.js";

/** What the host had before the cluster changed it, put back at teardown. */
interface HostState {
  sysctls: Record<string, string>;
  rootPropagation: string;
}

const sysctlsV4 = { "net.ipv4.ip_forward": "1", "net.bridge.bridge-nf-call-iptables": "1" };
/** With IPv6 the same for its family; the forward drop below is `inet`, so pods' IPv6 stays on the machine too. */
const sysctls6 = { "net.ipv6.conf.all.forwarding": "1", "net.bridge.bridge-nf-call-ip6tables": "1" };
const sysctlPath = (key: string) => `/proc/sys/${key.replaceAll(".", "/")}`;

async function run(command: string, ...args: string[]): Promise<void> {
  await execa(command, args);
}

/**
 * Readies the host for the node: / shared (the agent's pod sees netns mounted after it
 * started), forwarding and bridged traffic through iptables (kube-proxy's Services), the
 * node's address on a portless bridge with the service range routed to it, and a forward
 * drop so that nothing from the pods' bridge leaves it for another link: pods reach each
 * other and the host, never the machine's uplink.
 */
export async function prepareHost(): Promise<void> {
  const sysctls = { ...sysctlsV4, ...(hasIpv6() ? sysctls6 : {}) };
  const state: HostState = {
    sysctls: Object.fromEntries(Object.keys(sysctls).map((key) => [key, readFileSync(sysctlPath(key), "utf8").trim()])),
    rootPropagation: (await execa("findmnt", ["-no", "PROPAGATION", "/"])).stdout.trim(),
  };
  writeFileSync(paths.hostState, JSON.stringify(state));
  await run("mount", "--make-rshared", "/");
  for (const [key, value] of Object.entries(sysctls)) writeFileSync(sysctlPath(key), value);
  await run("ip", "link", "add", nodeLink, "type", "bridge");
  await run("ip", "addr", "add", `${nodeIp}/32`, "dev", nodeLink);
  await run("ip", "link", "set", nodeLink, "up");
  await run("ip", "route", "add", serviceCidr, "dev", nodeLink);
  if (hasIpv6()) {
    // nodad: usable at once (kubelet checks its node IPs are the host's); the link has no neighbour to clash with.
    await run("ip", "addr", "add", `${nodeIp6}/128`, "dev", nodeLink, "nodad");
    await run("ip", "-6", "route", "add", serviceCidr6, "dev", nodeLink);
  }
  // Calico gives each pod a routed cali* veth of its own, where the bridge gives them one bridge.
  const podLinks = currentLeg().primary === "calico" ? "cali*" : podBridge;
  const ruleset = `table inet ${nftTable} {
  chain forward {
    type filter hook forward priority -10; policy accept;
    iifname "${podLinks}" oifname != "${podLinks}" counter drop
  }
}`;
  await execa("nft", ["-f", "-"], { input: ruleset });
}

/** Packets the forward drop stopped (a pod trying to leave the machine). */
export async function droppedForwards(): Promise<number> {
  const { stdout } = await execa("nft", ["list", "table", "inet", nftTable]);
  return Number(/counter packets (\d+)/.exec(stdout)?.[1] ?? Number.NaN);
}

/** The node's cgroups (every node's, with several). */
export const removeNodeCgroups = () => removeCgroups(cgroupRoot);

/**
 * Removes every KUBE-* chain and the rules jumping to them (kube-proxy's, and the canaries
 * and firewall kubelet makes in filter, nat and mangle), in both families and backends:
 * each table is saved, those lines dropped, and the rest restored as it was.
 */
async function removeKubeChains(): Promise<void> {
  for (const family of ["iptables", "ip6tables"]) {
    for (const backend of ["nft", "legacy"]) {
      const saved = await execa(`${family}-${backend}-save`, [], { reject: false });
      if (saved.exitCode !== 0 || !saved.stdout.includes("KUBE-")) continue;
      const kept = saved.stdout
        .split("\n")
        .filter((line) => !line.includes("KUBE-"))
        .join("\n");
      await execa(`${family}-${backend}-restore`, [], { input: `${kept}\n` });
    }
  }
}

/** Shim sockets nothing listens on any more (a shim killed with its containerd). */
async function removeStaleShimSockets(): Promise<void> {
  const dir = "/run/containerd/s";
  if (!existsSync(dir)) return;
  const { stdout } = await execa("ss", ["-xlnH"]);
  for (const socket of readdirSync(dir)) if (!stdout.includes(join(dir, socket))) rmSync(join(dir, socket), { force: true });
}

/**
 * Undoes prepareHost and what the node left on the host: the forward drop, kube-proxy's
 * and kubelet's chains, stale shim sockets, the links, libcni's cached results of the primary network, the agent's state dir, and the sysctls
 * and propagation as they were. Each step tolerates what is already gone.
 */
export async function restoreHost(): Promise<void> {
  await execa("nft", ["delete", "table", "inet", nftTable], { reject: false });
  await removeKubeChains();
  await removeStaleShimSockets();
  // A cali* veth outlives its pod only when the pod's netns was never deleted; one left is removed like the bridge.
  const { stdout: links } = await execa("ip", ["-o", "link", "show"]);
  const caliLinks = [...links.matchAll(/^\d+: (cali[0-9a-f]+)@/gm)].map((match) => match[1]!);
  for (const link of [nodeLink, podBridge, ...caliLinks]) await execa("ip", ["link", "del", link], { reject: false });
  const results = "/var/lib/cni/results";
  for (const file of existsSync(results) ? readdirSync(results) : []) {
    if (file.startsWith(`${primaryNetwork}-`)) rmSync(join(results, file), { force: true });
  }
  rmSync(agentStateDir, { recursive: true, force: true });
  if (!existsSync(paths.hostState)) return;
  const state = JSON.parse(readFileSync(paths.hostState, "utf8")) as HostState;
  for (const [key, value] of Object.entries(state.sysctls)) writeFileSync(sysctlPath(key), value);
  if (state.rootPropagation === "private") await run("mount", "--make-rprivate", "/");
  rmSync(paths.hostState);
}
