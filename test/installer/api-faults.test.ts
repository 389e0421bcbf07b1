import { writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { defaultManifestOptions } from "../../src/manifests/options.js";
import { renderManifests } from "../../src/manifests/render.js";
import { AgentHarness } from "../kit/agent/harness.js";
import { conflist } from "../kit/agent/host.js";
import { askAgent } from "../kit/agent/socket.js";
import { FakeApiServer, podObject } from "../kit/api/server.js";

const calico = conflist("k8s-pod-network", [{ type: "calico" }]);
const taint = { key: "meshcni.io/not-ready", effect: "NoSchedule" };
const skip = "config.linkerd.io/skip-subnets";

/**
 * The compiled agent against the in-test API server, made to fail as a real kube-apiserver
 * does only by accident (silent watches, 410s, 429s, restarts, clock skew): each situation
 * of issue 18's table, counting the requests the agent makes and checking that what it
 * answers the plugin afterwards is what the API holds. (The real kube-apiserver runs in
 * test/cluster/.) Watches
 * here ask for timeoutSeconds of 2 to 4 (--watch-timeout-seconds 2); the server sends a
 * bookmark every second.
 */
describe("the agent against the in-test API server's faults", () => {
  let api: FakeApiServer;
  let host: AgentHarness;
  const socket = () => join(host.stateDir, "agent", "plugin.sock");
  const podWatches = () => api.requests.filter((request) => request.path === "/api/v1/pods" && request.query.watch === "true");
  const lists = (path: string) => api.requests.filter((request) => request.path === path && request.query.watch === undefined);
  const warnings = () => host.logs.filter((line) => line.level === "warn" || line.level === "error");

  /** The agent's answer for shop/web: where it came from and the annotation the plugin would get. */
  const web = async () => {
    const answer = await askAgent(socket(), { get: "pod", namespace: "shop", name: "web", uid: "uid-shop-web" });
    if (!("object" in answer)) throw new Error(JSON.stringify(answer));
    const { metadata } = answer.object as { metadata: { annotations?: Record<string, string> } };
    return { cached: answer.cached, annotation: metadata.annotations?.[skip] };
  };
  /** Waits until the agent answers shop/web with this annotation, from its cache or (`cached` false) from the API. */
  const answersWith = (annotation: string, cached: boolean, timeoutMs: number) =>
    host.waitFor(async () => {
      const answer = await web();
      return answer.cached === cached && answer.annotation === annotation;
    }, timeoutMs);
  const annotate = (value: string, options: { quietly?: boolean } = {}) =>
    api.addPod(podObject("shop", "web", { proxy: "container", nodeName: "n1", annotations: { [skip]: value } }), options);

  const start = async (extra: string[] = [], env: NodeJS.ProcessEnv = {}) => {
    writeFileSync(host.path("10-calico.conflist"), calico);
    await host.startWithApi(api, ["--node", "n1", "--watch-timeout-seconds", "2", "--audit-seconds", "600", ...extra], env);
    await host.waitFor(async () => (await host.readyz()).status === 200, 10_000);
    await host.waitFor(async () => (await web()).cached, 10_000);
  };

  beforeEach(async () => {
    api = await new FakeApiServer().start();
    api.watches.bookmarkIntervalMs = 1000;
    annotate("10.1.0.0/16");
    host = new AgentHarness();
  });
  afterEach(async () => {
    await host.cleanup();
    await api.stop();
  });

  it.each([
    ["one ERROR event (500) and the end", { error: 500 } as const, "error"],
    ["a 200 and the end at once (a proxy, an overloaded server)", "close" as const, "closed"],
  ])("backs off when every watch gets %s, says so once, and answers fresh once it recovers", async (_what, fault, cause) => {
    await start();
    const before = podWatches().length;
    api.watchFaults.set("/api/v1/pods", fault);
    // The watch running ends at its time; the next three (each after its wait) get the fault.
    await host.waitFor(() => podWatches().length - before >= 3, 30_000);
    const tries = podWatches()
      .slice(before)
      .map((request) => request.at);
    // Backed off 1 s doubling, each wait stretched by up to as much again (before the back-off: 16,674 and 24,901 in 6 s).
    for (let i = 1; i < tries.length; i++) expect(tries[i]! - tries[i - 1]!).toBeGreaterThanOrEqual(950 * 2 ** (i - 1));
    expect(warnings().map((line) => line.msg)).toEqual([`the watch of pods ended early (${cause}); backing off`]);
    const restarts = () => host.metric(`meshcni_watch_restarts_total{watch="pods",cause="${cause}"}`);
    await host.waitFor(async () => (await restarts()) === podWatches().length - before, 5000);
    api.watchFaults.delete("/api/v1/pods");
    annotate("10.2.0.0/16");
    await answersWith("10.2.0.0/16", true, 20_000);
    await host.waitFor(() => host.logs.some((line) => line.msg === "the watch of pods recovered"), 10_000);
  });

  it("notices a silent watch (a half-open connection): answers from the API within seconds, tears the watch down, resumes", async () => {
    await start();
    api.watchFaults.set("/api/v1/pods", "silent");
    const before = podWatches().length;
    await host.waitFor(() => podWatches().length > before, 10_000);
    annotate("10.3.0.0/16", { quietly: true });
    // Stale past the watch's own bound (2 s here, 90 s by default): the API answers.
    await answersWith("10.3.0.0/16", false, 10_000);
    await host.waitFor(async () => ((await host.metric('meshcni_watch_restarts_total{watch="pods",cause="silent"}')) ?? 0) >= 1, 15_000);
    expect(await host.metric('meshcni_cache_age_seconds{cache="pods"}')).toBeGreaterThan(2);
    api.watchFaults.delete("/api/v1/pods");
    annotate("10.4.0.0/16");
    await answersWith("10.4.0.0/16", true, 20_000);
    expect(await host.metric('meshcni_cache_age_seconds{cache="pods"}')).toBeLessThan(2);
  });

  it("on a quiet cluster runs watch after watch with timeoutSeconds and bookmarks: no relist, no warning, each watch started only once the last ran its time", async () => {
    api.addNode({ metadata: { name: "n1" }, spec: {}, status: { conditions: [] } });
    await start();
    // Once each: the node-scope policy asked (a dry run accepted, then discovery), the node's condition set.
    await host.waitFor(async () => api.requests.some((request) => request.path === "/apis/admissionregistration.k8s.io/v1"), 5_000);
    await host.waitFor(async () => api.nodeConditions("n1").some((held) => held.message?.endsWith("0 meshed pods: 0 protected")), 15_000);
    const before = api.requests.length;
    const watchesOf = (path: string) =>
      api.requests.slice(before).filter((request) => request.path === path && request.query.watch === "true");
    const paths = ["/api/v1/pods", "/api/v1/namespaces/default/services", "/api/v1/nodes"];
    // Three watches of each of the three (pods, the kubernetes Service, the node), one after another; no namespace is watched.
    await host.waitFor(() => paths.every((path) => watchesOf(path).length >= 3), 30_000);
    const watches = api.requests.slice(before).filter((request) => request.query.watch === "true");
    for (const watch of watches)
      expect(watch.query).toMatchObject({ allowWatchBookmarks: "true", timeoutSeconds: expect.stringMatching(/^[234]$/) });
    expect(lists("/api/v1/pods")).toHaveLength(1);
    expect(api.requests.filter((request) => request.path === "/api/v1/namespaces")).toEqual([]);
    expect(warnings()).toEqual([]);
    // Nothing but watches, each the next only once the last ran the time it asked for (2-4 s here; by default 5-10 min:
    // under one request a minute for all three).
    expect(api.requests.slice(before).filter((request) => request.query.watch !== "true")).toEqual([]);
    expect([...new Set(watches.map((watch) => watch.path))].sort()).toEqual([...paths].sort());
    for (const path of paths) {
      const [first, second] = watchesOf(path);
      expect(second!.at - first!.at, path).toBeGreaterThanOrEqual(Number(first!.query.timeoutSeconds) * 1000 - 50);
    }
    expect(await web()).toEqual({ cached: true, annotation: "10.1.0.0/16" });
  });

  it("waits out API Priority and Fairness's 429 with Retry-After, then answers fresh", async () => {
    await start();
    const windowMs = 11_000;
    const from = performance.now();
    api.throttle = { until: Date.now() + windowMs, retryAfterSeconds: 5, path: /^\/api\/v1\/pods$/ };
    const before = api.requests.length;
    const tries = () =>
      api.requests
        .slice(before)
        .filter((request) => request.path === "/api/v1/pods")
        .map((request) => request.at);
    // The pods' watch ends (every 2-4 s here), is refused with 429, waits, and is back once the window is over.
    await host.waitFor(() => tries().some((at) => at > from + windowMs), 30_000);
    const refused = tries().filter((at) => at <= from + windowMs);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    expect(refused.length).toBeLessThanOrEqual(3);
    const waited = [...refused, tries().find((at) => at > from + windowMs)!];
    for (let i = 1; i < waited.length; i++) expect(waited[i]! - waited[i - 1]!).toBeGreaterThanOrEqual(4900);
    expect(await host.metric('meshcni_watch_restarts_total{watch="pods",cause="throttled"}')).toBeGreaterThanOrEqual(1);
    annotate("10.5.0.0/16");
    await answersWith("10.5.0.0/16", true, 15_000);
  });

  it("its token refused (a signing key rotated, the old one dropped): not ready, Unauthorized, saying why; its renewed token: ready, the plugin's renewed too", async () => {
    // Its Node registered: each mint is one TokenRequest, bound to it.
    api.addNode({ metadata: { name: "n1" }, spec: {} });
    await start();
    await host.waitFor(() => host.kubeconfig() !== "", 10_000);
    const mints = () => api.requestsTo("POST", /\/serviceaccounts\/meshcni-plugin\/token$/).length;
    const minted = mints();
    api.agentTokens.clear();
    api.minted.clear();
    // Each watch runs its 2 to 4 s; the next is refused.
    await host.waitFor(async () => (await host.readyz()).status === 503, 15_000);
    expect((await host.readyz()).body).toMatch(/^not ready: Unauthorized/);
    const reasons = [...host.logs].reverse().find((line) => line.msg === "not ready")?.reasons as string[];
    expect(reasons.join("\n")).toContain("the API server refuses the agent's token (401 Unauthorized) since");
    // kubelet renews the projected token (signed with the new key): the agent is ready again, and renews the plugin's.
    const renewed = "meshcni-agent-after-rotation";
    api.agentTokens.add(renewed);
    host.rotateToken(renewed, api.caPem);
    await host.waitFor(async () => (await host.readyz()).status === 200, 40_000);
    // The plugin's kubeconfig holds a token the server takes again (the old one it refuses).
    await host.waitFor(() => api.minted.has(parseYaml(host.kubeconfig()).users[0].user.token), 15_000);
    expect(mints()).toBe(minted + 1);
  });

  it("with an API server whose clock is 2 h behind: one TokenRequest, the kubeconfig written, ready, the skew said once", async () => {
    api.now = () => Date.now() - 2 * 3600_000;
    // Its Node is registered, as on a cluster: the token is bound to it.
    api.addNode({ metadata: { name: "n1" }, spec: {} });
    await start();
    await host.waitFor(() => host.kubeconfig() !== "", 10_000);
    // The token's life read on the server's clock, not this node's: an hour left, so no renewal due for 48 minutes (a
    // token read as expired two hours ago would be renewed at every chance, 10 s apart).
    expect(await host.metric("meshcni_plugin_token_remaining_seconds")).toBeGreaterThan(3500);
    expect(api.requestsTo("POST", /\/serviceaccounts\/meshcni-plugin\/token$/)).toHaveLength(1);
    expect([...api.minted.values()].map((minted) => minted.boundNode?.name)).toEqual(["n1"]);
    expect(host.kubeconfig()).not.toBe("");
    expect(host.logs.filter((line) => line.msg.startsWith("the API server's clock is"))).toHaveLength(1);
    expect(host.logs.find((line) => line.msg.startsWith("the API server's clock is"))?.msg).toMatch(
      /^the API server's clock is 7\d{3} s behind this node's/,
    );
  });

  it("lifts the startup taint again from a Node deleted and registered anew with it (kubelet's --register-with-taints)", async () => {
    api.addNode({ metadata: { name: "n1" }, spec: { taints: [taint] } });
    await start(["--startup-taint", "meshcni.io/not-ready"]);
    const taints = () => ((api.nodes.get("n1")?.spec ?? {}) as { taints?: unknown[] }).taints ?? [];
    await host.waitFor(() => taints().length === 0, 5000);
    api.deleteNode("n1");
    api.addNode({ metadata: { name: "n1" }, spec: { taints: [taint] } });
    await host.waitFor(() => taints().length === 0, 10_000);
    // Logged once the node is patched: the line may still be in the pipe.
    await host.waitFor(() => host.logs.filter((line) => line.msg === "startup taint removed").length === 2, 2000);
  });

  it("keeps its Node's MeshcniReady condition: True with the node's meshed pods summed up, one patch per change, False with the cause", async () => {
    const kubeletReady = { type: "Ready", status: "True", reason: "KubeletReady" };
    api.addNode({ metadata: { name: "n1" }, spec: {}, status: { conditions: [kubeletReady] } });
    api.admissionPolicies = renderManifests(defaultManifestOptions).filter((object) => object.kind.startsWith("ValidatingAdmissionPolicy"));
    api.agentUser = { username: "system:serviceaccount:meshcni:meshcni", node: "n1" };
    const condition = () => api.nodeConditions("n1").find((held) => held.type === "MeshcniReady");
    const patches = () => api.requestsTo("PATCH", /^\/api\/v1\/nodes\/n1\/status$/).length;
    api.addPod(podObject("shop", "web", { proxy: "container", nodeName: "n1", podIP: "10.9.9.9" }));
    // A resync and a sweep every second: each could patch the condition, and none may when nothing changed.
    await start(["--resync-seconds", "1", "--audit-seconds", "1"]);
    await host.waitFor(() => /1 meshed pod: 0 protected, 1 unknown$/.test(condition()?.message ?? ""), 10_000);
    expect(condition()).toMatchObject({
      status: "True",
      reason: "Ready",
      message: expect.stringMatching(/^meshcni \S+ chained in 10-calico.conflist; /),
    });
    const settled = patches();
    const reconciles = () => host.logs.filter((line) => line.msg === "reconcile").length;
    const sweeps = async () => (await host.metric("meshcni_audit_duration_seconds_count")) ?? 0;
    const [reconciled, swept] = [reconciles(), await sweeps()];
    await host.waitFor(async () => reconciles() >= reconciled + 2 && (await sweeps()) >= swept + 2, 10_000);
    expect(patches()).toBe(settled);
    writeFileSync(host.path("10-calico.conflist"), "{ broken");
    await host.waitFor(() => condition()?.status === "False", 10_000);
    expect(condition()).toMatchObject({ reason: "ActiveConfigInvalid", message: expect.stringContaining("10-calico.conflist") });
    expect(api.nodeConditions("n1")[0]).toEqual(kubeletReady);
  });

  it("under meshcni's node-scope admission policy: lifts its own Node's taint, and a token of another node lifts none", async () => {
    api.admissionPolicies = renderManifests(defaultManifestOptions).filter((object) => object.kind.startsWith("ValidatingAdmissionPolicy"));
    const taints = () => ((api.nodes.get("n1")?.spec ?? {}) as { taints?: unknown[] }).taints ?? [];
    api.addNode({ metadata: { name: "n1" }, spec: { taints: [taint] } });
    // A stolen token of node n2's agent, given to an agent that says it is n1's.
    api.agentUser = { username: "system:serviceaccount:meshcni:meshcni", node: "n2" };
    // It never gets ready: it cannot mint the plugin's token bound to n1 either.
    writeFileSync(host.path("10-calico.conflist"), calico);
    await host.startWithApi(api, ["--node", "n1", "--startup-taint", "meshcni.io/not-ready"]);
    const refused = (what: string) => warnings().some((line) => String(line.error ?? line.msg).includes(what));
    await host.waitFor(() => refused("may change only its own Node") && refused("may mint tokens bound only to its own Node"), 10_000);
    expect(taints()).toHaveLength(1);
    expect((await host.readyz()).status).toBe(503);
    await host.stop();
    api.agentUser = { username: "system:serviceaccount:meshcni:meshcni", node: "n1" };
    await start(["--startup-taint", "meshcni.io/not-ready"]);
    await host.waitFor(() => taints().length === 0, 10_000);
  });

  it("says not ready, PolicyNotBound in its Node's condition, when a renamed ServiceAccount slips past the node-scope policy", async () => {
    api.admissionPolicies = renderManifests(defaultManifestOptions).filter((object) => object.kind.startsWith("ValidatingAdmissionPolicy"));
    api.addNode({ metadata: { name: "n1" }, spec: {}, status: { conditions: [] } });
    // A kustomize namePrefix: system:serviceaccount:meshcni:staging-meshcni, which the policy does not match (its RBAC renamed with it).
    api.agentUser = { username: "system:serviceaccount:meshcni:staging-meshcni", node: "n1" };
    api.addServiceAccount("meshcni", "staging-meshcni");
    api.authorizeAs({}, "staging-");
    writeFileSync(host.path("10-calico.conflist"), calico);
    await host.startWithApi(api, ["--node", "n1", "--watch-timeout-seconds", "2"]);
    const condition = () => api.nodeConditions("n1").find((held) => held.type === "MeshcniReady");
    await host.waitFor(() => condition()?.reason === "PolicyNotBound", 10_000);
    expect(condition()).toMatchObject({ status: "False", message: expect.stringContaining("kustomize namePrefix") });
    expect((await host.readyz()).status).toBe(503);
    // Said at info while a policy just applied may still be taking effect (the error past 30 s: test/unit/agent/scope-check.test.ts).
    expect(host.logs.filter((line) => String(line.msg).includes("does not hold")).map((line) => line.level)).toEqual(["info"]);
  });

  it("uninstalls at SIGTERM when its DaemonSet was deleted unseen and the API fails a while before it answers (a restarted server)", async () => {
    api.addDaemonSet("meshcni", "meshcni");
    api.addPod(podObject("meshcni", "agent-x", { daemonSet: "meshcni" }));
    // Its watch of the DaemonSet brings nothing (as one not yet resumed after the restart): only a stop's question can tell.
    api.watchFaults.set("/apis/apps/v1/namespaces/meshcni/daemonsets", "hang");
    await start([], { POD_NAMESPACE: "meshcni", POD_NAME: "agent-x" });
    await host.waitFor(() => host.logs.some((line) => line.msg === "a stop will ask about this DaemonSet"), 10_000);
    const daemonSet = "/apis/apps/v1/namespaces/meshcni/daemonsets/meshcni";
    api.faults.set(daemonSet, { status: 503 });
    api.deleteDaemonSet("meshcni", "meshcni");
    const answering = setTimeout(() => api.faults.delete(daemonSet), 1500);
    try {
      expect(await host.stop()).toBe(0);
    } finally {
      clearTimeout(answering);
    }
    expect(host.logs.find((line) => line.msg === "uninstalled")?.why).toBe("the DaemonSet is deleted");
    expect(api.requests.filter((request) => request.method === "GET" && request.path === daemonSet).length).toBeGreaterThan(1);
    expect(host.types("10-calico.conflist")).not.toContain("meshcni");
  });

  it.each([
    ["a watch accepted but its headers never sent", false],
    ["the whole API server hung, its own DaemonSet unreadable", true],
  ])("exits within two seconds of SIGTERM with %s", async (_what, everything) => {
    api.addDaemonSet("meshcni", "meshcni");
    api.addPod(podObject("meshcni", "agent-x", { daemonSet: "meshcni" }));
    await start([], { POD_NAMESPACE: "meshcni", POD_NAME: "agent-x" });
    api.watchFaults.set("/api/v1/pods", "hang");
    if (everything) {
      // Once it knows its DaemonSet, a stop asks about it by name: that is what hangs.
      await host.waitFor(() => host.logs.some((line) => line.msg === "a stop will ask about this DaemonSet"), 10_000);
      api.faults.set("/apis/apps/v1/namespaces/meshcni/daemonsets/meshcni", { hang: true });
    }
    const before = podWatches().length;
    await host.waitFor(() => podWatches().length > before, 15_000);
    const stopping = performance.now();
    expect(await host.stop()).toBe(0);
    expect(performance.now() - stopping).toBeLessThan(2500);
    const why = host.logs.find((line) => line.msg.startsWith("stopping; meshcni stays"))?.why;
    expect(why).toMatch(everything ? /cannot tell whether the DaemonSet stays/ : /the DaemonSet stays/);
  });

  it.each([
    ["a plugin's connection held open (a plugin stopped midway)", () => ({ connection: connect(socket()), text: '{"get":"namespace"' })],
    [
      "a scrape of /metrics stalled midway through its request",
      () => {
        const [address, port] = host.address.split(":");
        return { connection: connect(Number(port), address), text: "GET /metrics HTTP/1.1\r\nHost: node\r\n" };
      },
    ],
  ])("exits within two seconds of SIGTERM with %s", async (_what, open) => {
    await start();
    const { connection: held, text } = open();
    await new Promise((resolve) => held.once("connect", resolve));
    // The agent drops the connection as it stops: a reset is what the held side should see.
    held.on("error", () => {});
    const dropped = new Promise((resolve) => held.once("close", resolve));
    held.write(text);
    try {
      const stopping = performance.now();
      expect(await host.stop()).toBe(0);
      expect(performance.now() - stopping).toBeLessThan(2500);
      await dropped;
    } finally {
      held.destroy();
    }
  });
});
