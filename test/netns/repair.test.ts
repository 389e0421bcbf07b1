import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { AgentHarness, rbacOptionsFor } from "../kit/agent/harness.js";
import { FakeApiServer, type PodOptions, podObject } from "../kit/api/server.js";
import { agentTemplate, deleteLoopbackRule, loopbackRule, sleep } from "../kit/common.js";
import { writeLinkerdCniRules } from "../kit/linkerd/netconf.js";
import { TestNetwork } from "../kit/netns/network.js";
import { natRules } from "../kit/netns/plugin-process.js";
import { describeAsRoot } from "../kit/root-suites.js";

const node = "node-r";
const taint = { key: "meshcni.io/not-ready", effect: "NoSchedule" };
const otherTaint = { key: "dedicated", value: "mesh", effect: "NoExecute" };

/**
 * Grants a scenario may never use: its own DaemonSet, read as it stops (keep or uninstall);
 * a namespace or the kubernetes Service read one at a time, while their caches are stale.
 */
const onlyAtAStopOrOnAStaleCache = ["get apps/daemonsets", "get namespaces", "get services"];

/**
 * A node where pods started before meshcni was chained (the node-start race) or without
 * it: the agent comes up, finds them by what their netns hold, and repairs them by policy.
 */
function scenario(subnet: number) {
  const api = new FakeApiServer();
  const net = new TestNetwork(subnet);
  let host: AgentHarness;
  let client = "";
  const agentDirs = () => ({ conf: host.netDir, bin: host.binDir });

  /** A pod through the plain network (no meshcni) or the agent's chain. */
  const startPod = async (name: string, via: "plain" | "agent", options: PodOptions = {}) =>
    net.startPod(api, {
      namespace: "shop",
      name,
      network: via === "plain" ? "plain" : "primary",
      node,
      options,
      ...(via === "plain" ? {} : { dirs: agentDirs() }),
    });
  const eventsFor = (name: string) => api.events.filter((event) => (event.involvedObject as { name: string }).name === name);
  const hasRedirect = async (netns: string) => (await natRules(netns, "nft")).includes(":PROXY_INIT_REDIRECT - [0:0]");
  /** Waits for `count` more of the agent's sweeps to have ended (its audit histogram's count), instead of for a time. */
  const afterSweeps = async (count: number) => {
    const ended = async () => (await host.metric("meshcni_audit_duration_seconds_count")) ?? 0;
    const from = await ended();
    await host.waitFor(async () => (await ended()) >= from + count, 15_000);
  };

  /** What the agent's roles grant that none of its requests used, but for what only a stop or a stale cache asks for. */
  const grantedUnused = () => api.unusedGrants("agent").filter((grant) => !onlyAtAStopOrOnAStaleCache.includes(grant));
  /** Starts the API and the network; `before` runs before the agent (pods of the node-start race). */
  const setup = async (agentArgs: string[], before: () => Promise<void> = async () => undefined) => {
    host = new AgentHarness({ onHost: true });
    // The RBAC the manifests render for these flags: evict's evictions and labels, label's labels.
    (await api.start()).authorizeAs(rbacOptionsFor(agentArgs));
    api.addNode({ metadata: { name: node }, spec: { taints: [otherTaint, taint] } });
    writeFileSync(join(net.confDir, "plain.conflist"), JSON.stringify(net.primaryConflist("plain")));
    writeFileSync(host.path("10-primary.conflist"), JSON.stringify(net.primaryConflist("primary")));
    client = (await net.startPod(api, { namespace: "shop", name: "client", network: "plain", node, options: { proxy: false } })).netns;
    await before();
    api.addPod(podObject("meshcni", "agent-self", { proxy: "container", nodeName: node, podIP: "10.251.0.250", daemonSet: "meshcni" }));
    // As the DaemonSet runs it: the template kubelet's copy of the ConfigMap gives, checked against the ConfigMap.
    const template = agentTemplate(net.stateDir);
    api.setConfigMap("meshcni", "meshcni-config", { cni_network_config: template });
    await host.startWithApi(
      api,
      [
        "--template",
        template,
        "--node",
        node,
        "--state-dir",
        net.stateDir,
        "--audit-seconds",
        "1",
        "--cri-socket",
        await net.criSocket(),
        ...agentArgs,
      ],
      { POD_NAMESPACE: "meshcni", POD_NAME: "agent-self", MESHCNI_CONFIG_MAP: "meshcni-config" },
    );
  };
  const teardown = async () => {
    await host?.cleanup();
    await net.cleanup();
    await api.stop();
  };
  return {
    api,
    net,
    get host() {
      return host;
    },
    get client() {
      return client;
    },
    startPod,
    eventsFor,
    hasRedirect,
    afterSweeps,
    grantedUnused,
    setup,
    teardown,
  };
}

describeAsRoot("the agent's repair, policy redirect (the default)", () => {
  const s = scenario(50);
  let early = { netns: "", ip: "" };
  beforeAll(() =>
    s.setup(["--startup-taint", "meshcni.io/not-ready:NoSchedule"], async () => {
      early = await s.startPod("early", "plain", { owned: true });
      // The app and the proxy listen before the repair: the pod is never restarted.
      await s.net.serve(early.netns, { 4143: "proxy-inbound", 8080: "app" });
      await s.startPod("leaving", "plain", { owned: true, deleting: true });
    }),
  );
  afterAll(() => s.teardown());

  it("removes the startup taint once ready, keeping the node's other taints", async () => {
    await s.host.waitFor(() => s.host.logs.some((line) => line.msg === "startup taint removed"), 10_000);
    expect((s.api.nodes.get(node)!.spec as { taints: unknown[] }).taints).toEqual([otherTaint]);
    // Conditional on the node as read: a merge patch naming its resourceVersion (409 if it changed meanwhile).
    expect(s.api.requestsTo("PATCH", /^\/api\/v1\/nodes\/node-r$/)[0]!.body).toMatchObject({
      metadata: { resourceVersion: expect.any(String) },
      spec: { taints: [otherTaint] },
    });
  });

  it("writes the redirect into a pod that started without meshcni: a real TCP connection lands on 4143, the pod keeps running", async () => {
    await s.host.waitFor(() => s.hasRedirect(early.netns), 10_000);
    expect(await s.net.connect(s.client, early.ip, 8080)).toBe("proxy-inbound");
    expect(s.api.requestsTo("DELETE", /\/pods\//)).toEqual([]);
    expect(s.api.requestsTo("POST", /\/eviction$/)).toEqual([]);
    await s.host.waitFor(() => s.eventsFor("early").length === 1, 5000);
    expect(s.eventsFor("early")[0]).toMatchObject({
      reason: "MeshRedirectMissing",
      action: "WriteRedirect",
      // Protected now: said, not warned of (meshcni status lists pods whose newest Event is a Warning).
      type: "Normal",
      involvedObject: { kind: "Pod", uid: "uid-shop-early" },
    });
    expect(s.eventsFor("early")[0]!.message).toContain("connections opened before stay outside the mesh until they reconnect");
    expect(readdirSync(join(s.net.stateDir, "attachments")).some((name) => name.startsWith("repaired-uid-shop-early"))).toBe(true);
  });

  it("repairs a pod started without meshcni after the agent is up, and says how long it took", async () => {
    const late = await s.startPod("late", "plain", { owned: true });
    const runningAt = performance.now(); // the pod shows its IP in the API: its sandbox's network is up
    while (!(await s.hasRedirect(late.netns))) {
      if (performance.now() - runningAt > 10_000) throw new Error(`no redirect in ${late.netns}; agent log:\n${s.host.stderr.join("\n")}`);
      await sleep(5);
    }
    process.stdout.write(
      `\nrepair latency: pod running in the API -> redirect in its netns: ${Math.round(performance.now() - runningAt)} ms\n`,
    );
    await s.host.waitFor(() => s.eventsFor("late").length === 1, 5000);
  });

  it("restores a drifted pod's redirect, with an Event saying it drifted", async () => {
    const drifting = await s.startPod("drifting", "agent", { owned: true });
    await s.afterSweeps(2);
    expect(s.eventsFor("drifting")).toEqual([]);
    await deleteLoopbackRule(drifting.netns);
    await s.host.waitFor(() => s.eventsFor("drifting").length === 1, 10_000);
    expect(s.eventsFor("drifting")[0]).toMatchObject({ reason: "MeshRedirectDrifted" });
    expect(s.eventsFor("drifting")[0]!.message).toContain(`missing rule: ${loopbackRule}`);
    expect(await natRules(drifting.netns, "nft")).toContain(
      '-A PROXY_INIT_OUTPUT -o lo -m comment --comment "proxy-init/ignore-loopback" -j RETURN',
    );
  });

  it("never acts on its own pod or a pod being deleted, and counts what it did", async () => {
    await s.afterSweeps(2);
    expect(s.eventsFor("agent-self")).toEqual([]);
    expect(s.eventsFor("leaving")).toEqual([]);
    expect(s.eventsFor("early")).toHaveLength(1);
    expect(await s.host.metric('meshcni_repairs_total{action="redirect",result="done"}')).toBe(3);
    expect(await s.host.metric('meshcni_meshed_pods{status="protected"}')).toBe(3);
    // Left alone: the pod being deleted; no netns on this node holds the agent's own (fake) pod's IP.
    expect(await s.host.metric('meshcni_meshed_pods{status="missing"}')).toBe(1);
    expect(await s.host.metric('meshcni_meshed_pods{status="unknown"}')).toBe(1);
  });

  it("was granted by its roles nothing it did not use, but what only a stale cache or a stop asks for", () => {
    // Its roles as `meshcni manifests --startup-taint meshcni.io/not-ready:NoSchedule` renders them (deploy/'s):
    // lifting the taint used the nodes' get and patch.
    expect(s.grantedUnused()).toEqual([]);
  });
});

describeAsRoot("the agent's repair, policy evict", () => {
  const s = scenario(53);
  const evictionsOf = (name: string) => s.api.requestsTo("POST", new RegExp(`/pods/${name}/eviction$`));
  beforeAll(() =>
    s.setup(["--repair", "evict", "--evict-namespaces", "shop", "--max-evictions-per-minute", "1"], async () => {
      // Swept in this order: the guarded pod's 429 spends no budget; the first eviction does.
      await s.startPod("guarded", "plain", { owned: true });
      s.api.disruptionBudgetBlocks.add("shop/guarded");
      for (const name of ["first", "second"]) await s.startPod(name, "plain", { owned: true });
      await s.startPod("bare", "plain");
    }),
  );
  afterAll(() => s.teardown());

  it("evicts through the Eviction API within its budget per minute (later sweeps evict no more), never forces past a PodDisruptionBudget, labels a pod without a controller", async () => {
    await s.host.waitFor(() => s.api.requestsTo("PATCH", /\/pods\/bare$/).length === 1, 10_000);
    await s.afterSweeps(2); // the budget stays spent at later sweeps within the minute
    expect(evictionsOf("first")).toHaveLength(1);
    expect(evictionsOf("first")[0]!.body).toMatchObject({ kind: "Eviction", deleteOptions: { preconditions: { uid: "uid-shop-first" } } });
    expect(evictionsOf("second")).toEqual([]);
    expect(evictionsOf("guarded").length).toBeGreaterThanOrEqual(1);
    expect(s.api.deleting("shop", "guarded")).toBe(false);
    expect(s.eventsFor("guarded")).toEqual([]);
    expect(s.api.requestsTo("DELETE", /\/pods\//)).toEqual([]);
    expect(s.eventsFor("first")[0]!.message).toContain("evicted it through the Eviction API (PodDisruptionBudgets hold)");
    expect(s.eventsFor("bare")[0]!.message).toContain("instead of evicting it: no controller would recreate it");
    expect(await s.host.metric('meshcni_repairs_total{action="evict",result="blocked"}')).toBeGreaterThanOrEqual(1);
    expect(await s.host.metric('meshcni_repairs_total{action="evict",result="done"}')).toBe(1);
  });

  it("was granted by its roles nothing it did not use, but what only a stale cache or a stop asks for", () => {
    // Its roles as `meshcni manifests --repair evict --startup-taint ""` renders them, against every request it made here.
    expect(s.grantedUnused()).toEqual([]);
  });
});

describeAsRoot("the agent's repair, policy evict, a PodDisruptionBudget that holds", () => {
  const s = scenario(55);
  beforeAll(() =>
    s.setup(["--repair", "evict", "--evict-namespaces", "shop"], async () => {
      await s.startPod("guarded", "plain", { owned: true });
      s.api.disruptionBudgetBlocks.add("shop/guarded");
    }),
  );
  afterAll(() => s.teardown());

  it("tries again at later sweeps, never forcing it and without an Event each time", async () => {
    await s.host.waitFor(() => s.api.requestsTo("POST", /\/pods\/guarded\/eviction$/).length >= 3, 10_000);
    expect(s.api.deleting("shop", "guarded")).toBe(false);
    expect(s.eventsFor("guarded")).toEqual([]);
    expect(s.api.requestsTo("DELETE", /\/pods\//)).toEqual([]);
  });
});

describeAsRoot("the agent's repair, policy evict, refused otherwise than by a budget", () => {
  const s = scenario(56);
  beforeAll(() =>
    s.setup(["--repair", "evict", "--evict-namespaces", "shop", "--max-evictions-per-minute", "5"], async () => {
      for (const name of ["throttled", "split"]) await s.startPod(name, "plain", { owned: true });
      s.api.evictionRefusals.set("shop/throttled", "throttled");
      s.api.evictionRefusals.set("shop/split", "several-budgets");
    }),
  );
  afterAll(() => s.teardown());

  it("waits out API Priority and Fairness's Retry-After (no block, no Event), and gives up for good on a pod several PDBs match, saying so in words", async () => {
    const evictions = (name: string) => s.api.requestsTo("POST", new RegExp(`/pods/${name}/eviction$`)).map((request) => request.at);
    await s.host.waitFor(() => evictions("throttled").length >= 2 && s.eventsFor("split").length === 1, 15_000);
    await s.afterSweeps(2); // neither is asked more often than its answer allows
    const throttled = evictions("throttled");
    for (let i = 1; i < throttled.length; i++) expect(throttled[i]! - throttled[i - 1]!).toBeGreaterThanOrEqual(1900);
    expect(s.eventsFor("throttled")).toEqual([]);
    expect(await s.host.metric('meshcni_repairs_total{action="evict",result="blocked"}')).toBeUndefined();
    expect(await s.host.metric('meshcni_repairs_total{action="evict",result="throttled"}')).toBeGreaterThanOrEqual(2);
    expect(evictions("split")).toHaveLength(1);
    const [event] = s.eventsFor("split");
    expect(event!.message).toContain(
      "meshcni cannot evict it: This pod has more than one PodDisruptionBudget, which the eviction subresource does not support. It will not try again",
    );
    expect(event!.message).not.toMatch(/HTTP-Code|Headers|Body:/);
    s.api.evictionRefusals.delete("shop/throttled");
    await s.host.waitFor(() => s.api.deleting("shop", "throttled"), 10_000);
  });
});

for (const policy of ["label", "none"] as const) {
  describeAsRoot(`the agent's repair, policy ${policy}`, () => {
    const s = scenario(policy === "label" ? 51 : 52);
    beforeAll(() => s.setup(["--repair", policy], () => s.startPod("owned-early", "plain", { owned: true }).then(() => undefined)));
    afterAll(() => s.teardown());

    it(`emits the Event and ${policy === "label" ? "labels" : "leaves"} the pod, writing no rules`, async () => {
      await s.host.waitFor(() => s.eventsFor("owned-early").length === 1, 10_000);
      await s.afterSweeps(1);
      expect(s.api.requestsTo("DELETE", /\/pods\//)).toEqual([]);
      expect(s.api.requestsTo("PATCH", /\/pods\/owned-early$/)).toHaveLength(policy === "label" ? 1 : 0);
      expect(s.eventsFor("owned-early")[0]!.message).toContain(
        policy === "none" ? "takes no action" : "labelled it meshcni.io/unprotected=true",
      );
    });

    it("was granted by its roles nothing it did not use, but what only a stale cache or a stop asks for", () => {
      expect(s.grantedUnused()).toEqual([]);
    });
  });
}

describeAsRoot("a node migrating from linkerd-cni", () => {
  const s = scenario(54);
  const names = ["web", "api", "worker"];
  beforeAll(() =>
    s.setup([], async () => {
      for (const name of names) {
        const { netns } = await s.startPod(name, "plain", { owned: true });
        await writeLinkerdCniRules(netns, s.api.pods.get(`shop/${name}`) as V1Pod);
      }
    }),
  );
  afterAll(() => s.teardown());

  it("adopts every pod linkerd-cni set up: no repair, no API write, a record for each", async () => {
    const adopted = () => s.host.logs.filter((line) => line.msg.startsWith("adopted a pod")).map((line) => line.pod);
    await s.host.waitFor(() => adopted().length === names.length, 10_000);
    expect(adopted().sort()).toEqual(names.map((name) => `shop/${name}`).sort());
    await s.afterSweeps(1);
    // The agent's only writes: minting the plugin's token, and its own Node's MeshcniReady condition. None to a pod.
    const writes = s.api.requests.filter((request) => request.method !== "GET").map((request) => `${request.method} ${request.path}`);
    expect([...new Set(writes)]).toEqual([
      "POST /api/v1/namespaces/meshcni/serviceaccounts/meshcni-plugin/token",
      "PATCH /api/v1/nodes/node-r/status",
    ]);
    expect(
      readdirSync(join(s.net.stateDir, "attachments"))
        .filter((name) => name.startsWith("adopted-"))
        .sort(),
    ).toEqual(names.map((name) => `adopted-uid-shop-${name}_eth0.json`).sort());
    // Recorded now: the next sweep (never within 2 s of the last) finds them protected.
    await s.host.waitFor(async () => (await s.host.metric('meshcni_meshed_pods{status="protected"}')) === names.length, 5000);
  });
});
