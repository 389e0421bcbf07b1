import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { execa } from "execa";
import { sleep } from "../common.js";
import { removeCgroups } from "../leftovers.js";
import {
  controlPlaneIp,
  inNode,
  mountNsDir,
  type NodeLayout,
  type NodesSite,
  nodeAddress,
  nodeRoutes,
  nodesBridge,
} from "./node-layout.js";

/**
 * Makes and removes the nodes of a multi-node cluster on this machine: each a netns and a
 * mount namespace of its own (node-layout.ts), a veth on the nodes' bridge, routes to the
 * other nodes' pods, its own /run and /tmp, and its dirs bound on the standard paths.
 * Removal finds everything from the host (a crashed run leaves no memory of what it made).
 */

async function run(argv: string[]): Promise<void> {
  const [command, ...args] = argv;
  const ran = await execa(command!, args, { reject: false });
  if (ran.exitCode !== 0) throw new Error(`${argv.join(" ")}: ${ran.stderr || ran.stdout}`);
}

/** Host dirs made only to be mount points inside nodes (no /etc/cni on this machine), removed at teardown when still empty. */
const madeDirsFile = (site: NodesSite) => join(site.dir, "nodes", "made-dirs.json");

function madeDirs(site: NodesSite): string[] {
  return existsSync(madeDirsFile(site)) ? (JSON.parse(readFileSync(madeDirsFile(site), "utf8")) as string[]) : [];
}

/** Makes `path` on the host, noting the first dir that was not there. */
function makeMountPoint(site: NodesSite, path: string): void {
  let first = path;
  while (!existsSync(dirname(first))) first = dirname(first);
  if (existsSync(path)) return;
  mkdirSync(path, { recursive: true });
  writeFileSync(madeDirsFile(site), JSON.stringify([...new Set([...madeDirs(site), first])]));
}

const isMountPoint = (path: string) =>
  readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .some((line) => line.split(" ")[4] === path);

/** The nodes' bridge with the control plane's address, and the private mount the mount namespace files are bound on. */
export async function prepareNodesHost(site: NodesSite): Promise<void> {
  const nsDir = mountNsDir(site);
  mkdirSync(join(site.dir, "nodes"), { recursive: true });
  mkdirSync(nsDir, { recursive: true });
  // unshare --mount=FILE refuses a file on a shared mount: / is rshared while a cluster runs.
  if (!isMountPoint(nsDir)) await run(["mount", "--bind", nsDir, nsDir]);
  await run(["mount", "--make-private", nsDir]);
  const bridge = nodesBridge(site);
  await run(["ip", "link", "add", bridge, "type", "bridge"]);
  await run(["ip", "addr", "add", `${controlPlaneIp(site)}/24`, "dev", bridge]);
  await run(["ip", "link", "set", bridge, "up"]);
}

/** One node: its namespaces, link, routes and forwarding, then its own /run and /tmp and its dirs on the standard paths. */
export async function createNode(site: NodesSite, layout: NodeLayout, all: NodeLayout[]): Promise<void> {
  await run(["ip", "netns", "add", layout.netns]);
  writeFileSync(layout.mountNs, "");
  // Slave: the host's later mounts (its netns) still show inside; the node's own never leak out.
  await run(["unshare", `--mount=${layout.mountNs}`, "--propagation", "slave", "true"]);
  await run(["ip", "link", "add", layout.veth, "type", "veth", "peer", "name", "eth0", "netns", layout.netns]);
  await run(["ip", "link", "set", layout.veth, "master", nodesBridge(site), "up"]);
  const inNetns = (...argv: string[]) => run(["ip", "-n", layout.netns, ...argv]);
  await inNetns("link", "set", "lo", "up");
  await inNetns("addr", "add", nodeAddress(layout), "dev", "eth0");
  await inNetns("link", "set", "eth0", "up");
  for (const route of nodeRoutes(layout, all)) await inNetns("route", "add", ...route);
  // The host reaches the node's pods through it (the API server's webhooks and exec); no route leaves the machine.
  await run(["ip", "route", "replace", layout.podCidr, "via", layout.ip]);
  // Inherited from the host when the netns was made: say it outright.
  // Bridged pod traffic through the node's iptables: kube-proxy's Services between pods of one node.
  await run(inNode(layout, ["sysctl", "-qw", "net.ipv4.ip_forward=1", "net.bridge.bridge-nf-call-iptables=1"]));
  const inMounts = (...argv: string[]) => run(inNode(layout, argv));
  await inMounts("mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", "/run");
  await inMounts("mount", "--make-rshared", "/run");
  await inMounts("mount", "-t", "tmpfs", "-o", "mode=1777", "tmpfs", "/tmp");
  for (const { path, source } of layout.binds) {
    mkdirSync(source, { recursive: true });
    // Under the node's own /run the mount point is its own; elsewhere it is made on the host's disk.
    if (path.startsWith("/run/")) await inMounts("mkdir", "-p", path);
    else makeMountPoint(site, path);
    await inMounts("mount", "--bind", source, path);
  }
}

/** The inode of a namespace, from a file it is bound on or a /proc/<pid>/ns link. */
const nsInode = (link: string) => Number(/\[(\d+)\]/.exec(readlinkSync(link))?.[1]);

/** Pids in any of these namespaces (shims, containers, stray plugins: whatever the node's daemons left). */
function pidsIn(inodes: Set<number>): number[] {
  return readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return ["mnt", "net"].some((ns) => inodes.has(nsInode(`/proc/${pid}/ns/${ns}`)));
      } catch {
        return false; // ended while listed
      }
    })
    .map(Number);
}

/** Kills every process in the nodes' namespaces and waits until none is left (saying which outlived it: teardown goes on). */
async function killNodeProcesses(inodes: Set<number>): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const pids = pidsIn(inodes);
    if (pids.length === 0) return;
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Gone already.
      }
    }
    await sleep(50);
  }
  console.warn(`processes in the nodes' namespaces outlived SIGKILL for 5 s: ${pidsIn(inodes).join(", ")}`);
}

/** The inodes of the namespaces these files are bound on; a plain file (a crash before unshare) matches no process. */
const inodesOf = (files: string[]) => new Set(files.filter((file) => existsSync(file)).map((file) => statSync(file).ino));

/**
 * One node gone for good while the others run, as a machine powered off: everything in it
 * killed, its namespaces, cgroups, dir and the routes to its pods (the host's and the other nodes') removed.
 */
export async function removeNode(layout: NodeLayout, others: NodeLayout[]): Promise<void> {
  await killNodeProcesses(inodesOf([layout.mountNs, join("/run/netns", layout.netns)]));
  await removeCgroups(layout.cgroupRoot);
  await execa("umount", [layout.mountNs], { reject: false });
  rmSync(layout.mountNs, { force: true });
  await execa("ip", ["netns", "del", layout.netns], { reject: false });
  await execa("ip", ["route", "del", layout.podCidr], { reject: false });
  for (const other of others) await execa("ip", ["-n", other.netns, "route", "del", layout.podCidr], { reject: false });
  rmSync(layout.dir, { recursive: true, force: true });
}

/**
 * Removes every node of the site: what runs in them, their mount namespaces (their /run,
 * binds and container mounts go with the last reference), their netns (veths go with them),
 * the bridge, the host's routes to their pods, and the mount points made on the host.
 * Safe to run when nothing is there.
 */
export async function removeNodes(site: NodesSite): Promise<void> {
  const nsDir = mountNsDir(site);
  const mountFiles = existsSync(nsDir) ? readdirSync(nsDir).filter((name) => name.endsWith(".mnt")) : [];
  const netnsNames = existsSync("/run/netns") ? readdirSync("/run/netns").filter((name) => name.startsWith(`${site.prefix}-node-`)) : [];
  await killNodeProcesses(
    inodesOf([...mountFiles.map((name) => join(nsDir, name)), ...netnsNames.map((name) => join("/run/netns", name))]),
  );
  // Containers whose shim was killed with them are in no node namespace any more: found by their cgroups.
  await removeCgroups(site.cgroupRoot);
  for (const name of mountFiles) {
    await execa("umount", [join(nsDir, name)], { reject: false });
    rmSync(join(nsDir, name), { force: true });
  }
  for (const name of netnsNames) await execa("ip", ["netns", "del", name], { reject: false });
  const { stdout: routes } = await execa("ip", ["-4", "route", "show"]);
  for (const [, cidr] of routes.matchAll(new RegExp(`^(${site.podsNet.replaceAll(".", "\\.")}\\.\\d+\\.0/24) via `, "gm")))
    await execa("ip", ["route", "del", cidr!], { reject: false });
  await execa("ip", ["link", "del", nodesBridge(site)], { reject: false });
  if (isMountPoint(nsDir)) await execa("umount", ["-l", nsDir], { reject: false });
  // rmdir here would detach another cluster's node mounts on these dirs (a mount point elsewhere does not stop it).
  const othersRun = existsSync("/run/netns") && readdirSync("/run/netns").some((name) => /-node-\d+$/.test(name));
  if (othersRun) console.warn(`kept ${madeDirs(site).join(", ")}: nodes of another cluster may be mounted on them`);
  else for (const dir of madeDirs(site).reverse()) removeEmptyTree(dir);
  rmSync(join(site.dir, "nodes"), { recursive: true, force: true });
  rmSync(nsDir, { recursive: true, force: true });
}

/** Removes a tree of empty dirs (mount points made on the host); anything a user put there stays. */
function removeEmptyTree(dir: string): void {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir, { withFileTypes: true })) if (entry.isDirectory()) removeEmptyTree(join(dir, entry.name));
  try {
    rmdirSync(dir);
  } catch {
    // Not empty: not ours alone.
  }
}
