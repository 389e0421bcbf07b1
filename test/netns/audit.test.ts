import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { V1Pod } from "@kubernetes/client-node";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeApiServer, type PodOptions, podObject } from "../kit/api/server.js";
import { deleteLoopbackRule, loopbackRule } from "../kit/common.js";
import { writeLinkerdCniRules } from "../kit/linkerd/netconf.js";
import { TestNetwork } from "../kit/netns/network.js";
import { natRules } from "../kit/netns/plugin-process.js";
import { meshcniBinary } from "../kit/paths.js";
import { describeAsRoot } from "../kit/root-suites.js";

/**
 * `meshcni audit` on a node with a pod of each kind: protected (ADDed through meshcni),
 * adopted (linkerd-cni's rules, no record), missing (ADDed through a chain without it, as
 * at node start), drifted (a rule deleted by hand), unknown (netns gone), and pods it must
 * not judge. It changes nothing without --repair.
 */
describeAsRoot("meshcni audit", () => {
  const api = new FakeApiServer();
  const net = new TestNetwork(40);
  let kubeconfig = "";
  let criSocket = "";
  const startPod = async (name: string, network: "mesh" | "plain", options: PodOptions = {}, node = "node-a") =>
    (await net.startPod(api, { namespace: "shop", name, network, node, options })).netns;
  const audit = (...args: string[]) =>
    execa(
      meshcniBinary,
      ["audit", "--kubeconfig", kubeconfig, "--state-dir", net.stateDir, "--net-dir", net.confDir, "--cri-socket", criSocket, ...args],
      { reject: false },
    );

  beforeAll(async () => {
    await api.start();
    kubeconfig = api.writeKubeconfig();
    criSocket = await net.criSocket();
    net.writeConflist("mesh", { kubernetes: { kubeconfig }, linkerd: { "iptables-mode": "nft" } });
    writeFileSync(join(net.confDir, "plain.conflist"), JSON.stringify(net.primaryConflist("plain")));
    await startPod("checkout", "mesh");
    await startPod("cart", "plain");
    const legacy = await startPod("legacy", "plain");
    await writeLinkerdCniRules(legacy, api.pods.get("shop/legacy") as V1Pod);
    const search = await startPod("search", "mesh");
    await deleteLoopbackRule(search);
    await net.removeNetns(await startPod("gone", "mesh"));
    await startPod("batch", "plain", { proxy: false });
    api.addPod(podObject("shop", "scheduled", { proxy: "container", nodeName: "node-a" }));
    api.addPod(podObject("shop", "hostnet", { proxy: "container", nodeName: "node-a", podIP: "10.0.0.1" }));
    (api.pods.get("shop/hostnet")!.spec as Record<string, unknown>).hostNetwork = true;
    await startPod("solo", "mesh", {}, "node-b");
  });

  afterAll(async () => {
    await net.cleanup();
    await api.stop();
  });

  it("tells protected, missing, drifted and unknown pods apart, and exits 1", async () => {
    const result = await audit("--node", "node-a", "--output", "json");
    expect(result.exitCode, result.stderr).toBe(1);
    const report = JSON.parse(result.stdout);
    expect(report.node).toBe("node-a");
    expect(report.pods.map((pod: { name: string; status: string }) => [pod.name, pod.status])).toEqual([
      ["cart", "missing"],
      ["checkout", "protected"],
      ["gone", "unknown"],
      ["legacy", "adopted"],
      ["search", "drifted"],
    ]);
    const drifted = report.pods.find((pod: { name: string }) => pod.name === "search");
    expect(drifted.details).toEqual([`ipv4: PROXY_INIT_OUTPUT: missing rule: ${loopbackRule}`]);
    expect(report.summary).toEqual({ protected: 1, adopted: 1, missing: 1, drifted: 1, unknown: 1 });
    expect(api.requestsTo("GET", /^\/api\/v1\/pods$/).at(-1)?.query.fieldSelector).toBe("spec.nodeName=node-a");
    // An audit without --repair changes nothing: no record for the adopted pod, no API write.
    expect(readdirSync(join(net.stateDir, "attachments")).some((name) => name.startsWith("adopted-"))).toBe(false);
    expect(api.requests.filter((request) => request.method !== "GET")).toEqual([]);
  });

  it("prints a table naming each pod's status and reason", async () => {
    const { stdout } = await audit("--node", "node-a");
    expect(stdout).toMatch(/^NAMESPACE\s+POD\s+STATUS\s+DETAIL$/m);
    expect(stdout).toMatch(/^shop\s+cart\s+missing\s+no ADD record and no redirect in its netns/m);
    expect(stdout).toMatch(/^shop\s+legacy\s+adopted\s+no meshcni record, but its netns holds meshcni's plan/m);
    expect(stdout).toMatch(/^shop\s+search\s+drifted\s+ipv4: PROXY_INIT_OUTPUT: missing rule/m);
    expect(stdout).toContain("node node-a: 5 meshed pods, 1 protected, 1 adopted, 1 missing, 1 drifted, 1 unknown");
    process.stdout.write(`\nmeshcni audit --node node-a\n${stdout}`);
  });

  it("exits 0 when every meshed pod of the node is protected", async () => {
    const result = await audit("--node", "node-b");
    expect(result.exitCode, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^shop\s+solo\s+protected/m);
  });

  describe("meshcni rules NAMESPACE/POD", () => {
    const rules = (...args: string[]) =>
      execa(
        meshcniBinary,
        ["rules", ...args, "--node", "node-a", "--kubeconfig", kubeconfig, "--state-dir", net.stateDir, "--net-dir", net.confDir],
        {
          reject: false,
        },
      );

    it("shows a protected pod's redirect as its netns holds it, the same as the plan, and exits 0", async () => {
      const result = await rules("shop/checkout");
      expect(result.exitCode, result.stderr).toBe(0);
      expect(result.stdout).toMatch(/^pod shop\/checkout \(uid-shop-checkout\) on node-a: protected$/m);
      expect(result.stdout).toContain("backend nft, plan from its ADD record");
      expect(result.stdout).toContain(
        `ipv4, in its netns:\n  -A PREROUTING -m comment --comment proxy-init/install-proxy-init-prerouting -j PROXY_INIT_REDIRECT`,
      );
      expect(result.stdout).toContain(`  -A PROXY_INIT_OUTPUT ${loopbackRule}`);
      expect(result.stdout).toContain("ipv4, meshcni's plan:\n  (the same)");
      process.stdout.write(`\nmeshcni rules shop/checkout\n${result.stdout}`);
    });

    it("shows what a drifted pod lacks beside the plan, and exits 1", async () => {
      const result = await rules("shop/search", "--output", "json");
      expect(result.exitCode, result.stderr).toBe(1);
      const shown = JSON.parse(result.stdout);
      expect(shown).toMatchObject({ status: "drifted", backend: "nft", planFrom: "its ADD record" });
      const [ipv4] = shown.families;
      expect(ipv4.family).toBe("ipv4");
      expect(ipv4.planned).toContain(`-A PROXY_INIT_OUTPUT ${loopbackRule}`);
      expect(ipv4.found).not.toContain(`-A PROXY_INIT_OUTPUT ${loopbackRule}`);
      expect(ipv4.planned.filter((line: string) => !ipv4.found.includes(line))).toEqual([`-A PROXY_INIT_OUTPUT ${loopbackRule}`]);
      expect((await rules("shop/search")).stdout).toContain(`differences:\n  ipv4: PROXY_INIT_OUTPUT: missing rule: ${loopbackRule}`);
    });

    it("shows a pod without a redirect: nothing in its netns, the plan ADD would write now", async () => {
      const result = await rules("shop/cart");
      expect(result.exitCode).toBe(1);
      expect(result.stdout).toContain("ipv4, in its netns:\n  (none)");
      expect(result.stdout).toContain("plan from meshcni's entry in the active config");
      expect(result.stdout).toContain(
        "ipv4, meshcni's plan:\n  -A PREROUTING -m comment --comment proxy-init/install-proxy-init-prerouting -j PROXY_INIT_REDIRECT",
      );
    });

    it.each([
      [["shop/nope"], "meshcni rules: pod shop/nope is not on node node-a\n"],
      [["shop"], 'meshcni rules: expected one NAMESPACE/POD, got "shop" (see meshcni rules --help)\n'],
      [["shop/a", "shop/b"], 'meshcni rules: expected one NAMESPACE/POD, got "shop/a shop/b" (see meshcni rules --help)\n'],
      [["shop/checkout", "--output", "yaml"], 'meshcni rules: --output must be table or json, not "yaml" (see meshcni rules --help)\n'],
    ])("refuses %j with one line and exit 2", async (args, message) => {
      const result = await rules(...args);
      expect([result.exitCode, result.stderr]).toEqual([2, message.trimEnd()]);
    });
  });

  it("--repair collects a record whose sandbox the runtime no longer has (containerd never calls CNI GC), past the grace, and only then", async () => {
    const netns = await startPod("forgotten", "mesh", {}, "node-d");
    const uid = String(api.pods.get("shop/forgotten")!.metadata!.uid);
    const recordPath = readdirSync(join(net.stateDir, "attachments"))
      .map((name) => join(net.stateDir, "attachments", name))
      .find((path) => JSON.parse(readFileSync(path, "utf8")).pod.name === "forgotten")!;
    const record = JSON.parse(readFileSync(recordPath, "utf8"));
    // Written a minute ago: past the grace a new record gets.
    writeFileSync(recordPath, JSON.stringify({ ...record, time: new Date(Date.now() - 60_000).toISOString() }));
    const swept = async () => JSON.parse((await audit("--node", "node-d", "--repair", "redirect", "--output", "json")).stdout);
    // (Records of the other nodes' pods in this shared state dir may go as podGone: only sandboxes are counted here.)
    expect((await swept()).recordsRemoved.sandboxGone).toBe(0);
    expect(existsSync(recordPath)).toBe(true);
    // The runtime removed the sandbox and never sent DEL; its netns is still mounted.
    net.runtime.sandboxes.delete(uid);
    expect(existsSync(net.netnsPath(netns))).toBe(true);
    expect((await swept()).recordsRemoved.sandboxGone).toBe(1);
    expect(existsSync(recordPath)).toBe(false);
  });

  describe("a pod that claims another pod's IP (NET_ADMIN in its own netns)", () => {
    let victim = "";
    let attacker = "";
    const records = () => readdirSync(join(net.stateDir, "attachments")).filter((name) => name.includes("victim"));
    const evictions = () => api.requests.filter((request) => request.method === "POST" && request.path.endsWith("/eviction"));
    const sweep = async (policy: string, ...args: string[]) => {
      const result = await audit("--node", "node-c", "--repair", policy, "--output", "json", ...args);
      for (const name of records()) rmSync(join(net.stateDir, "attachments", name));
      return JSON.parse(result.stdout).pods as Array<{ name: string; status: string; details: string[] }>;
    };

    beforeAll(async () => {
      const onNodeC = (name: string, options: PodOptions) =>
        net.startPod(api, { namespace: "shop", name, network: "plain", node: "node-c", options });
      const started = await onNodeC("victim", { owned: true });
      victim = started.netns;
      await writeLinkerdCniRules(victim, api.pods.get("shop/victim") as V1Pod);
      // A newer netns (listed first on tmpfs) that adds the victim's address to its own eth0.
      const other = await onNodeC("attacker", { proxy: false });
      attacker = other.netns;
      await execa("ip", ["-n", attacker, "addr", "add", `${started.ip}/32`, "dev", "eth0"]);
    });

    it.each(["evict", "redirect"])(
      "--repair %s asks the runtime: the victim is judged by its own netns (adopted), nothing is evicted or written",
      async (policy) => {
        const before = evictions().length;
        expect(await sweep(policy)).toEqual([expect.objectContaining({ name: "victim", status: "adopted" })]);
        expect(evictions().length).toBe(before);
        expect(await natRules(attacker, "nft")).toEqual([]);
        expect(net.runtime.calls).toContain("PodSandboxStatus");
      },
    );

    it.each(["evict", "redirect"])(
      '--repair %s without a runtime (--cri-socket ""): an IP in two netns is no identity, so unknown, untouched, unrecorded',
      async (policy) => {
        const before = evictions().length;
        const [judged] = await sweep(policy, "--cri-socket", "");
        expect(judged).toMatchObject({ name: "victim", status: "unknown" });
        expect(judged!.details[0]).toMatch(
          /^the pod's IP [\d.]+ is in 2 netns .*: any pod can claim an address, so none is taken as the pod's$/,
        );
        expect(evictions().length).toBe(before);
        expect(await natRules(attacker, "nft")).toEqual([]);
        expect((await natRules(victim, "nft")).length).toBeGreaterThan(0);
      },
    );
  });
});
