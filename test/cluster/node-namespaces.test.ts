import { spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, expect, it } from "vitest";
import { nodeContainerdSpec } from "../kit/cluster/containerd.js";
import { pauseArchive } from "../kit/cluster/images.js";
import { currentLeg } from "../kit/cluster/leg.js";
import { primaryConflist } from "../kit/cluster/node.js";
import { inNode, type NodeLayout, type NodesSite, nodeContainerd, nodeLayout, nodesBridge, onHost } from "../kit/cluster/node-layout.js";
import { createNode, prepareNodesHost, removeNodes } from "../kit/cluster/node-namespaces.js";
import { components } from "../kit/cluster/teardown.js";
import { until } from "../kit/common.js";
import { CriClient } from "../kit/cri/client.js";
import { describeAsRoot } from "../kit/root-suites.js";

/** The multi-node cluster's nodes without the cluster: the namespaces, links and mounts each gets, and what removal leaves. */
describeAsRoot("the nodes of a multi-node cluster, on one machine", () => {
  // Names and addresses of the test's own, clear of a cluster this machine may be running; not under /tmp, which a node has its own of.
  const site: NodesSite = {
    dir: mkdtempSync("/var/tmp/meshcni-nodes-"),
    prefix: "mct",
    nodesNet: "10.247.0",
    podsNet: "10.246",
    cgroupRoot: "/meshcni-test-nodes",
  };
  const nodes: NodeLayout[] = [nodeLayout(1, site), nodeLayout(2, site)];
  // The TCP script where a node sees it too: a checkout under /tmp is out of a node's sight (it has a /tmp of its own).
  const scripts = mkdtempSync("/var/tmp/meshcni-tcp-");
  const tcp = join(scripts, "tcp.mjs");
  copyFileSync(join(import.meta.dirname, "../kit/netns/tcp.mjs"), tcp);
  const hostHadEtcCni = existsSync("/etc/cni");
  const hostNetns = existsSync("/run/netns") ? readdirSync("/run/netns") : [];
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
    rmSync(scripts, { recursive: true, force: true });
  });

  it("gives each node its own dirs on the standard paths, its own /run, and the host's cgroups", async () => {
    await inNodeRun(nodes[0]!, "touch", "/etc/cni/net.d/written-in-node-1", "/run/containerd/node-1.sock", "/run/own");
    expect(readdirSync(join(nodes[0]!.dir, "cni-net.d"))).toEqual(["written-in-node-1"]);
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

  it("runs a containerd per node, each with its own pods: TCP from a pod on one node to a pod on the other, through both nodes", async () => {
    const bin = await components();
    const archive = await pauseArchive();
    const runtimes: Array<{ layout: NodeLayout; client: CriClient }> = [];
    try {
      for (const layout of nodes) {
        for (const plugin of ["bridge", "host-local", "loopback", "portmap"])
          copyFileSync(join(bin["cni-plugins"], plugin), onHost(layout, `/opt/cni/bin/${plugin}`));
        const conflist = primaryConflist("1.0.0", { cidrs: [layout.podCidr], ipamDir: "/var/lib/cni/networks" });
        writeFileSync(onHost(layout, "/etc/cni/net.d/10-primary.conflist"), JSON.stringify(conflist));
        const spec = nodeContainerdSpec(bin.containerd, currentLeg().containerd, layout);
        const log = openSync(join(layout.dir, "containerd.log"), "a");
        // Not detached: removal below finds it by its namespaces, as it finds a crashed run's.
        spawn(spec.command, spec.args, { env: { ...process.env, ...spec.env }, stdio: ["ignore", log, log] });
        const socket = onHost(layout, nodeContainerd(layout).socket);
        runtimes.push({ layout, client: new CriClient(socket) });
        await until(() => existsSync(socket), 30_000, 50);
        // As kubelet waits for it: containerd loads the CNI config after its socket is up.
        const client = runtimes.at(-1)!.client;
        const networkReady = () =>
          client.status().then(
            ({ status }) => status.conditions.some((condition) => condition.type === "NetworkReady" && condition.status),
            () => false,
          );
        await until(networkReady, 30_000, 100);
        await execa(join(bin.containerd, "ctr"), ["--address", socket, "--namespace", "k8s.io", "images", "import", archive]);
      }
      const pods = [];
      for (const { layout, client } of runtimes) {
        const uid = `uid-${layout.name}`;
        const id = await client
          .runPodSandbox({
            metadata: { name: `pod-${layout.name}`, uid, namespace: "default", attempt: 0 },
            linux: { cgroupParent: `${layout.cgroupRoot}/pod-${uid}`, securityContext: { namespaceOptions: { network: "POD" } } },
          })
          .catch((error: Error) => {
            throw new Error(`${error.message}\n${readFileSync(join(layout.dir, "containerd.log"), "utf8")}`);
          });
        const { status, info } = await client.podSandboxStatus(id);
        const { pid } = JSON.parse(info.info ?? "{}") as { pid: number };
        expect(status.network?.ip.startsWith(`${site.podsNet}.${layout.index}.`), status.network?.ip).toBe(true);
        pods.push({ ip: status.network!.ip, netns: `/proc/${pid}/ns/net` });
      }
      // The pod's netns is the node's (its /run/netns), unseen on the host.
      expect(readdirSync("/run/netns").filter((name) => name.startsWith("cni-") && !hostNetns.includes(name))).toEqual([]);
      const server = spawn("nsenter", [`--net=${pods[1]!.netns}`, process.execPath, tcp, "serve", "7002=pod-on-node-2"], {
        stdio: ["ignore", "pipe", "inherit"],
      });
      try {
        let ready = "";
        server.stdout.on("data", (chunk) => (ready += chunk));
        await until(() => ready.includes("ready"), 10_000, 20);
        const connected = await execa("nsenter", [`--net=${pods[0]!.netns}`, process.execPath, tcp, "connect", pods[1]!.ip, "7002"]);
        expect(connected.stdout).toBe("pod-on-node-2");
      } finally {
        server.kill("SIGKILL");
      }
    } finally {
      for (const { client } of runtimes) client.close();
    }
  });

  it("removes everything: processes left in a node (containerd, shims, containers), their cgroups, its mounts, netns, bridge, routes and the mount points made on the host", async () => {
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
    expect(readdirSync("/sys/fs/cgroup").filter((controller) => existsSync(join("/sys/fs/cgroup", controller, site.cgroupRoot)))).toEqual(
      [],
    );
    expect(readdirSync(site.dir)).toEqual([]);
  });
});
