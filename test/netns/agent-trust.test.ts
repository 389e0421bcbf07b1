import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, expect, it } from "vitest";
import { AgentHarness } from "../kit/agent/harness.js";
import { FakeApiServer, podObject } from "../kit/api/server.js";
import { agentTemplate, podArgs } from "../kit/common.js";
import { TestNetwork } from "../kit/netns/network.js";
import { invokePlugin, natRules, pluginEnv } from "../kit/netns/plugin-process.js";
import { describeAsRoot } from "../kit/root-suites.js";

const node = "node-t";

/**
 * What a root caller on the agent's socket can do to another pod (issue 41's F1): a process
 * with no capabilities in mount, PID and network namespaces of its own, the socket reached
 * through a hostPath as another DaemonSet's pod would have it. It asks the agent to write an
 * ADD for a running meshed pod with a netconf of its own that lets every port through.
 */
describeAsRoot("the agent's socket, asked by a caller of its own making", () => {
  const api = new FakeApiServer();
  const net = new TestNetwork(86);
  const host = new AgentHarness({ onHost: true });
  const socket = () => join(net.stateDir, "agent", "plugin.sock");
  let entry: Record<string, unknown> = {};

  /**
   * Asks on the socket as root without a capability, in namespaces of its own (the socket on the filesystem it shares: the
   * hostPath), passing the netns it opens at `passing` (SCM_RIGHTS) as the plugin passes the pod's.
   */
  const askAsOther = async (ask: object, passing?: string): Promise<Record<string, unknown>> => {
    const client = [
      "import os,socket,sys",
      "s=socket.socket(socket.AF_UNIX)",
      "s.connect(sys.argv[1])",
      "s.settimeout(5)",
      'line=sys.argv[2].encode()+b"\\n"',
      "socket.send_fds(s,[line],[os.open(sys.argv[3],os.O_RDONLY)]) if len(sys.argv)>3 else s.sendall(line)",
      "print(s.recv(65536).decode())",
    ].join("\n");
    const caller = ["--mount", "--pid", "--net", "--fork", "setpriv", "--bounding-set=-all", "--inh-caps=-all"];
    const args = [socket(), JSON.stringify(ask), ...(passing ? [passing] : [])];
    const { stdout } = await execa("unshare", [...caller, "/usr/bin/python3", "-c", client, ...args]);
    return JSON.parse(stdout) as Record<string, unknown>;
  };

  beforeAll(async () => {
    await api.start();
    api.addNode({ metadata: { name: node } });
    writeFileSync(host.path("10-primary.conflist"), JSON.stringify(net.primaryConflist("primary")));
    const args = ["--template", agentTemplate(net.stateDir), "--node", node, "--state-dir", net.stateDir, "--audit-seconds", "1"];
    // The node's runtime, which the agent asks before it writes for a pod: whose sandbox holds which netns.
    args.push("--cri-socket", await net.criSocket());
    await host.startWithApi(api, args, {
      POD_NAMESPACE: "meshcni",
    });
    await host.waitFor(async () => (await host.readyz()).status === 200, 10_000);
    await host.waitFor(() => host.logs.some((line) => line.msg === "answering the plugin"), 5000);
    entry = (host.json("10-primary.conflist").plugins ?? []).at(-1) as Record<string, unknown>;
  }, 30_000);

  afterAll(async () => {
    await host.cleanup();
    await net.cleanup();
    await api.stop();
  });

  it("cannot weaken a running pod's redirect: the agent writes only its own entry's, and hands the caller's back", async () => {
    api.addPod(podObject("shop", "victim", { proxy: "container", nodeName: node }));
    const netns = await net.addNetns("victim");
    const path = net.netnsPath(netns);
    const args = `${podArgs("shop", "victim")};K8S_POD_UID=uid-shop-victim`;
    const added = await invokePlugin(pluginEnv(path, "c-victim", args), { cniVersion: "1.0.0", name: "primary", ...entry });
    expect(added.exitCode, added.stdout).toBe(0);
    const rules = await natRules(netns, "nft");
    expect(rules).toContain(":PROXY_INIT_REDIRECT - [0:0]");

    const { dev, ino } = statSync(path);
    const linkerd = { ...(entry.linkerd as object), "inbound-ports-to-ignore": ["1-65535"], "outbound-ports-to-ignore": ["1-65535"] };
    const ask = {
      get: "decision",
      netconf: JSON.stringify({ cniVersion: "1.0.0", name: "primary", ...entry, linkerd, prevResult: { cniVersion: "1.0.0" } }),
      namespace: "shop",
      name: "victim",
      uid: "uid-shop-victim",
      apply: { containerId: "c-victim", ifname: "eth0", netns: path, netnsId: { dev, ino } },
    };
    const answer = await askAsOther(ask);
    // Handed back: the decision, for a plugin of the caller's making to write itself (it cannot enter the pod's netns).
    expect(Object.keys(answer)).toEqual(["decided"]);
    expect(await natRules(netns, "nft")).toEqual(rules);
    const reasons = host.logs.filter(
      (line) => line.msg === "the plugin writes itself: the agent writes only what its own netconf entry says",
    );
    expect(reasons.map((line) => line.reason)).toEqual([
      "its inbound-ports-to-ignore, outbound-ports-to-ignore differ from the agent's own entry",
    ]);
  });

  it("cannot have a tenant's plan written into a victim's netns by naming the tenant, running elsewhere, while passing the victim's", async () => {
    const victim = net.netnsPath(`mc-${net.id}-victim`);
    const rules = await natRules(`mc-${net.id}-victim`, "nft");
    const tenant = await net.addNetns("tenant");
    api.addPod(
      podObject("shop", "tenant", {
        proxy: "container",
        nodeName: node,
        annotations: { "config.linkerd.io/skip-inbound-ports": "1-65535", "config.linkerd.io/skip-outbound-ports": "1-65535" },
      }),
    );
    net.runtime.sandboxes.set("uid-shop-tenant", net.netnsPath(tenant));
    const { dev, ino } = statSync(victim);
    const ask = {
      get: "decision",
      netconf: JSON.stringify({ cniVersion: "1.0.0", name: "primary", ...entry, prevResult: { cniVersion: "1.0.0" } }),
      namespace: "shop",
      name: "tenant",
      uid: "uid-shop-tenant",
      apply: { containerId: "c-forged", ifname: "eth0", netns: victim, netnsId: { dev, ino } },
    };
    const answer = await askAsOther(ask, victim);
    // Handed back: a plugin the caller made cannot write it (no capabilities), the runtime's real plugin still can.
    expect(Object.keys(answer)).toEqual(["decided"]);
    expect(await natRules(`mc-${net.id}-victim`, "nft")).toEqual(rules);
    const reasons = host.logs.filter(
      (line) => line.msg === "the plugin writes itself: the agent writes only what its own netconf entry says",
    );
    expect(reasons.map((line) => line.reason)).toContainEqual(
      expect.stringMatching(
        new RegExp(`^the container runtime runs pod shop/tenant in sandbox \\S+ with netns ${net.netnsPath(tenant)}, not ${victim}$`),
      ),
    );
  });

  it("writes into no netns another pod's attachment holds, by the runtime's word, and lets no record alone lock a pod out", async () => {
    const skipAll = { "config.linkerd.io/skip-inbound-ports": "1-65535", "config.linkerd.io/skip-outbound-ports": "1-65535" };
    const netconf = JSON.stringify({ cniVersion: "1.0.0", name: "primary", ...entry, prevResult: { cniVersion: "1.0.0" } });
    const addFor = (name: string, containerId: string, path: string) => {
      const { dev, ino } = statSync(path);
      const apply = { containerId, ifname: "eth0", netns: path, netnsId: { dev, ino } };
      return askAsOther({ get: "decision", netconf, namespace: "shop", name, uid: `uid-shop-${name}`, apply }, path);
    };
    // The owner's sandbox, ready in the runtime with its netns, ADDed as the runtime would (its sandbox id, its record).
    const owner = net.netnsPath(await net.addNetns("owner"));
    api.addPod(podObject("shop", "owner", { proxy: "container", nodeName: node }));
    net.runtime.sandboxes.set("uid-shop-owner", owner);
    const args = `${podArgs("shop", "owner")};K8S_POD_UID=uid-shop-owner`;
    const added = await invokePlugin(pluginEnv(owner, net.runtime.sandboxIdOf(owner), args), {
      cniVersion: "1.0.0",
      name: "primary",
      ...entry,
    });
    expect(added.exitCode, added.stdout).toBe(0);
    const rules = await natRules(owner, "nft");
    // A pod with no sandbox yet (the runtime cannot say where it runs), named with the owner's netns.
    api.addPod(podObject("shop", "late", { proxy: "container", nodeName: node, annotations: skipAll }));
    expect(Object.keys(await addFor("late", "c-late", owner))).toEqual(["decided"]);
    expect(await natRules(owner, "nft")).toEqual(rules);
    const reasons = host.logs.filter(
      (line) => line.msg === "the plugin writes itself: the agent writes only what its own netconf entry says",
    );
    expect(reasons.map((line) => line.reason)).toContainEqual(
      `netns ${owner} is another pod's (uid uid-shop-owner): the container runtime has its sandbox ${net.runtime.sandboxIdOf(owner)} ready there`,
    );
    // A record of a caller's making, claiming a new pod's netns before its ADD: not believed, the pod's ADD is written.
    const fresh = net.netnsPath(await net.addNetns("fresh"));
    api.addPod(podObject("shop", "fresh", { proxy: "container", nodeName: node }));
    const forged = { version: 1, state: "added", pod: { namespace: "shop", name: "ghost", uid: "uid-ghost" }, containerId: "c-ghost" };
    writeFileSync(
      join(net.stateDir, "attachments", "c-ghost_eth0.json"),
      JSON.stringify({ ...forged, ifname: "eth0", netns: fresh, backend: "nft", plans: [], time: new Date().toISOString() }),
    );
    expect(Object.keys(await addFor("fresh", net.runtime.sandboxIdOf(fresh), fresh))).toEqual(["applied"]);
    expect(await natRules(fresh, "nft")).toContain(":PROXY_INIT_REDIRECT - [0:0]");
  });

  it("finds a record weakened by hand (the caller owns the state dir as root) at its next sweep, and writes the pod's plan back, not the record's", async () => {
    const netns = await net.addNetns("weakened");
    const path = net.netnsPath(netns);
    net.runtime.sandboxes.set("uid-shop-weakened", path);
    api.addPod(podObject("shop", "weakened", { proxy: "container", nodeName: node }));
    const args = `${podArgs("shop", "weakened")};K8S_POD_UID=uid-shop-weakened`;
    const added = await invokePlugin(pluginEnv(path, "c-weakened", args), { cniVersion: "1.0.0", name: "primary", ...entry });
    expect(added.exitCode, added.stdout).toBe(0);
    // Running, as the API shows it once the sandbox is up: the sweeps judge it from now on.
    api.addPod(podObject("shop", "weakened", { proxy: "container", nodeName: node, podIP: "10.86.0.99" }));
    const rules = await natRules(netns, "nft");
    const file = join(net.stateDir, "attachments", "c-weakened_eth0.json");
    const record = JSON.parse(readFileSync(file, "utf8")) as { plans: Array<{ chains: Record<string, string[][]> }> };
    const letThrough = ["-p", "tcp", "-m", "multiport", "--dports", "1:65535", "-j", "RETURN"];
    const weakened = record.plans.map((plan) => ({
      ...plan,
      chains: Object.fromEntries(Object.entries(plan.chains).map(([chain, lines]) => [chain, [letThrough, ...lines]])),
    }));
    writeFileSync(file, JSON.stringify({ ...record, plans: weakened }));
    await host.waitFor(() => api.events.some((event) => event.reason === "MeshRedirectDrifted"), 15_000);
    const event = api.events.find((found) => found.reason === "MeshRedirectDrifted")!;
    expect(event.message).toContain("its ADD record's ipv4 plan has");
    await host.waitFor(() => JSON.stringify(JSON.parse(readFileSync(file, "utf8")).plans) === JSON.stringify(record.plans), 5000);
    expect(await natRules(netns, "nft")).toEqual(rules);
  });

  it("writes only into the netns a caller passes, and only where the path it names holds that one: a caller asserting learns nothing", async () => {
    const netns = `mc-${net.id}-victim`;
    const path = net.netnsPath(netns);
    const rules = await natRules(netns, "nft");
    expect(rules).toContain(":PROXY_INIT_REDIRECT - [0:0]");
    const { ino } = statSync(path);
    const netconf = JSON.stringify({ cniVersion: "1.0.0", name: "primary", ...entry });
    const del = { get: "del", containerId: "c-victim", ifname: "eth0", netns: path, netconf };
    // The pod's netns named, none passed (what a caller that cannot open it could send).
    expect(await askAsOther(del)).toEqual({
      error: "the agent does not remove it: the caller passed no netns descriptor with its question",
    });
    // The pod's netns named, the caller's own passed.
    const answer = await askAsOther(del, "/proc/self/ns/net");
    expect(answer).toEqual({
      error: `the agent could not remove it: network namespace ${path} is not the one the plugin opened: another namespace is there`,
    });
    expect(await natRules(netns, "nft")).toEqual(rules);
    expect(JSON.stringify(answer)).not.toContain(String(ino));
    expect(host.stderr.join("\n")).not.toContain(String(ino));
    // A descriptor that is no namespace: the connection is closed unanswered.
    await expect(askAsOther(del, "/etc/hostname")).rejects.toThrow();
    expect(host.logs.filter((line) => line.msg === "closed a connection on the plugin's socket").map((line) => line.reason)).toContain(
      "a descriptor passed that is no namespace",
    );
  });

  it("removes no redirect while the pod still runs: a caller passing a running pod's netns with a DEL is refused, the runtime's DEL later is not", async () => {
    const netns = `mc-${net.id}-victim`;
    const path = net.netnsPath(netns);
    const rules = await natRules(netns, "nft");
    expect(rules).toContain(":PROXY_INIT_REDIRECT - [0:0]");
    // The pod's proxy, listening on its inbound port as linkerd-proxy does, and on its outbound one over IPv6 only.
    const proxy = execa(
      "ip",
      [
        "netns",
        "exec",
        netns,
        "python3",
        "-c",
        [
          "import socket,time",
          "s=socket.socket();s.bind(('0.0.0.0',4143));s.listen()",
          "t=socket.socket(socket.AF_INET6);t.setsockopt(socket.IPPROTO_IPV6,socket.IPV6_V6ONLY,1);t.bind(('::',4140));t.listen()",
          "print('up',flush=True);time.sleep(60)",
        ].join("\n"),
      ],
      { reject: false },
    );
    await new Promise<void>((resolve) => proxy.stdout?.once("data", () => resolve()));
    const netconf = JSON.stringify({ cniVersion: "1.0.0", name: "primary", ...entry });
    const del = { get: "del", containerId: "c-victim", ifname: "eth0", netns: path, netconf };
    try {
      expect(await askAsOther(del, path)).toEqual({
        error: "the agent could not remove it: port 4143 and 4140 is listened on in the netns, as the pod's proxy does: its pod still runs",
      });
      expect(await natRules(netns, "nft")).toEqual(rules);
    } finally {
      proxy.kill("SIGKILL");
      await proxy;
    }
    // Its containers stopped, as the runtime stops them before its DEL: the agent removes the redirect.
    expect(await askAsOther(del, path)).toEqual({ applied: {} });
    expect(await natRules(netns, "nft")).toEqual([]);
  });
});
