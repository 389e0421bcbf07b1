import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, expect, it } from "vitest";
import { inNode, type NodeLayout, type NodesSite, nodeLayout, nodesBridge } from "../kit/cluster/node-layout.js";
import { createNode, prepareNodesHost, removeNodes } from "../kit/cluster/node-namespaces.js";
import { until } from "../kit/common.js";
import { describeAsRoot } from "../kit/root-suites.js";

const tcp = join(import.meta.dirname, "../kit/netns/tcp.mjs");

/** The multi-node cluster's nodes without the cluster: the namespaces, links and mounts each gets, and what removal leaves. */
describeAsRoot("the nodes of a multi-node cluster, on one machine", () => {
  // Names and addresses of the test's own, clear of a cluster this machine may be running; not under /tmp, which a node has its own of.
  const site: NodesSite = { dir: mkdtempSync("/var/tmp/meshcni-nodes-"), prefix: "mct", nodesNet: "10.247.0", podsNet: "10.246" };
  const nodes: NodeLayout[] = [nodeLayout(1, site), nodeLayout(2, site)];
  const hostHadEtcCni = existsSync("/etc/cni");
  const inNodeRun = async (layout: NodeLayout, ...argv: string[]) => {
    const [command, ...args] = inNode(layout, argv);
    return (await execa(command!, args)).stdout;
  };

  beforeAll(async () => {
    await removeNodes(site);
    await prepareNodesHost(site);
    for (const layout of nodes) await createNode(site, layout, nodes);
  });

  afterAll(async () => {
    await removeNodes(site);
    rmSync(site.dir, { recursive: true, force: true });
  });

  it("gives each node its own dirs on the standard paths, its own /run, and the host's cgroups", async () => {
    await inNodeRun(nodes[0]!, "touch", "/etc/cni/net.d/10-node-1.conflist", "/run/containerd/node-1.sock", "/run/own");
    expect(readdirSync(join(nodes[0]!.dir, "cni-net.d"))).toEqual(["10-node-1.conflist"]);
    expect(readdirSync(join(nodes[0]!.dir, "run-containerd"))).toEqual(["node-1.sock"]);
    expect(await inNodeRun(nodes[1]!, "ls", "-A", "/etc/cni/net.d", "/run")).not.toContain("node-1");
    expect(existsSync("/run/own")).toBe(false);
    if (!hostHadEtcCni) expect(readdirSync("/etc/cni/net.d")).toEqual([]);
    expect(await inNodeRun(nodes[1]!, "ls", "/sys/fs/cgroup")).toBe(readdirSync("/sys/fs/cgroup").sort().join("\n"));
  });

  it("routes each node's pods through that node: TCP from one node to the other's address and to its pod range", async () => {
    const pod = `${site.podsNet}.2.7`;
    // A pod address on node 2 (the bridge's gateway in a cluster), reached from node 1 by its route via node 2.
    await execa("ip", ["-n", nodes[1]!.netns, "addr", "add", `${pod}/32`, "dev", "lo"]);
    const [command, ...args] = inNode(nodes[1]!, [process.execPath, tcp, "serve", "7001=node-2"]);
    const server = spawn(command!, args, { stdio: ["ignore", "pipe", "inherit"] });
    let ready = "";
    server.stdout.on("data", (chunk) => (ready += chunk));
    try {
      await until(() => ready.includes("ready"), 10_000, 20);
      for (const target of [nodes[1]!.ip, pod])
        expect(await inNodeRun(nodes[0]!, process.execPath, tcp, "connect", target, "7001")).toBe("node-2");
      // The host reaches the node's pods too (the API server's calls to them), and no route leads anywhere else.
      expect((await execa(process.execPath, [tcp, "connect", pod, "7001"])).stdout).toBe("node-2");
      expect(await inNodeRun(nodes[0]!, "ip", "route", "show", "default")).toBe("");
    } finally {
      server.kill("SIGKILL");
    }
  });

  it("removes everything: processes left in a node, its mounts, netns, bridge, routes and the mount points made on the host", async () => {
    const [command, ...args] = inNode(nodes[0]!, ["sleep", "600"]);
    const stray = spawn(command!, args, { stdio: "ignore", detached: true });
    await removeNodes(site);
    await until(() => stray.exitCode !== null || stray.signalCode !== null, 5000, 20);
    const mounts = readFileSync("/proc/self/mountinfo", "utf8");
    expect(mounts).not.toContain(site.dir);
    expect(readdirSync("/run/netns").filter((name) => name.startsWith(`${site.prefix}-`))).toEqual([]);
    expect((await execa("ip", ["link", "show", nodesBridge(site)], { reject: false })).exitCode).not.toBe(0);
    expect((await execa("ip", ["-4", "route", "show"])).stdout).not.toContain(`${site.podsNet}.`);
    expect(existsSync("/etc/cni")).toBe(hostHadEtcCni);
    expect(readdirSync(site.dir)).toEqual([]);
  });
});
