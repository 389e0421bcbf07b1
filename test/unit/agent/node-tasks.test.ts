import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AgentClient } from "../../../src/agent/credentials.js";
import { type AgentMetrics, createAgentMetrics } from "../../../src/agent/metrics.js";
import { NodeTasks } from "../../../src/agent/node-tasks.js";
import { parseAgentOptions } from "../../../src/agent/options.js";
import type { SweepInput, SweepReport } from "../../../src/audit/contract.js";
import type { Readiness } from "../../../src/installer/readiness.js";
import { loadTemplate } from "../../../src/installer/template.js";
import { createNodeApi } from "../../../src/kube/node-api.js";
import { anyCaller, askAgent } from "../../kit/agent/socket.js";
import { FakeApiServer, podObject } from "../../kit/api/server.js";
import { kubeConfigOf, until } from "../../kit/common.js";
import { type LogEntry, memoryLogger } from "../../kit/memory-logger.js";

const taint = { key: "meshcni.io/not-ready", effect: "NoSchedule" };
const ready: Readiness = { ready: true, reasons: [], cause: undefined, active: "10-calico.conflist", missingPlugins: [] };
const notReady: Readiness = {
  ready: false,
  reasons: ["no kubeconfig /k"],
  cause: "NoKubeconfig",
  active: "10-calico.conflist",
  missingPlugins: [],
};

/** The node tasks in this process against the in-test API server, as a real one behaves (watches of 1-2 s here). */
describe("the agent's node tasks", () => {
  let dir: string;
  let api: FakeApiServer;
  let logs: LogEntry[];
  let metrics: AgentMetrics;
  let tasks: NodeTasks | undefined;
  const socket = () => join(dir, "agent", "plugin.sock");
  const requests = (path: RegExp, watch: boolean) =>
    api.requests.filter((request) => path.test(request.path) && (request.query.watch === "true") === watch);

  /** NodeTasks whose sweeps run `sweep`: a script that keeps its stdin and prints `report`. */
  const nodeTasks = (report = "{}") => {
    const script = join(dir, "meshcni");
    writeFileSync(join(dir, "report.json"), report);
    writeFileSync(script, `#!/bin/sh\n[ "$1" = sweep ] || exit 3\ncat > ${dir}/input.json\ncat ${dir}/report.json\n`);
    chmodSync(script, 0o755);
    const env = { POD_NAMESPACE: "meshcni", POD_NAME: "agent-x" };
    const argv = [
      ...["--node", "n1", "--host-root", join(dir, "host"), "--startup-taint", "meshcni.io/not-ready"],
      ...["--audit-seconds", "60", "--watch-timeout-seconds", "1"],
    ];
    const options = parseAgentOptions(argv, env, script);
    const template = loadTemplate(options.install);
    tasks = new NodeTasks(
      "n1",
      options,
      socket(),
      () => template,
      memoryLogger(logs),
      metrics,
      () => undefined,
      () => performance.now(),
      // Anyone may ask: the kernel's check of the caller needs the compiled binary (test/netns/agent-socket.test.ts).
      async () => anyCaller(),
    );
    return tasks;
  };
  /** Whether the agent answered from its cache (an error answer: no). */
  const cached = async (ask: Parameters<typeof askAgent>[1]) => {
    const answer = await askAgent(socket(), ask);
    return "cached" in answer && answer.cached;
  };
  const client = (): AgentClient => {
    const config = kubeConfigOf(api.writeAgentKubeconfig());
    return { api: createNodeApi(config, "n1"), config, kubeconfig: `kubeconfig-${Math.random()}` };
  };

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "meshcni-tasks-"));
    api = await new FakeApiServer().start();
    api.watches.bookmarkIntervalMs = 300;
    api.addNode({ metadata: { name: "n1" }, spec: { taints: [taint] } });
    logs = [];
    metrics = createAgentMetrics();
  });
  afterEach(async () => {
    await tasks?.stop();
    tasks = undefined;
    await api.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("answers the plugin from its caches while they are fresh, through the API otherwise or for a pod they do not hold", async () => {
    api.addPod(podObject("shop", "web", { proxy: "container", nodeName: "n1" }));
    nodeTasks().follow(client(), notReady);
    await until(() => existsSync(socket()), 2000);
    const web = { get: "pod", namespace: "shop", name: "web", uid: "uid-shop-web" } as const;
    await until(() => cached(web), 3000);
    // Its namespace was read as the meshed pod came to the node (it has no IP yet): its ADD asks nothing of the API.
    await until(() => requests(/^\/api\/v1\/namespaces\/shop$/, false).length === 1, 3000);
    expect(await askAgent(socket(), { get: "namespace", name: "shop" })).toMatchObject({ cached: true });
    expect(requests(/^\/api\/v1\/namespaces\/shop$/, false)).toHaveLength(1);
    expect(await askAgent(socket(), { get: "namespace", name: "elsewhere" })).toMatchObject({ error: expect.stringContaining("404") });
    expect(await askAgent(socket(), { get: "pod", namespace: "shop", name: "web", uid: "a-newer-pod" })).toMatchObject({ cached: false });
    expect(await askAgent(socket(), { get: "pod", namespace: "shop", name: "elsewhere" })).toEqual({
      gone: "the API server has no such pod (404 Not Found)",
    });
    // A pod its watch saw deleted (a sandbox started as it was deleted): answered gone, the API not asked.
    api.addPod(podObject("shop", "brief", { proxy: "container", nodeName: "n1" }));
    const brief = { get: "pod", namespace: "shop", name: "brief", uid: "uid-shop-brief" } as const;
    await until(() => cached(brief), 3000);
    api.deletePod("shop", "brief");
    await until(async () => "gone" in (await askAgent(socket(), brief)), 3000);
    expect(requests(/^\/api\/v1\/namespaces\/shop\/pods\/brief$/, false)).toHaveLength(0);
    // A half-open pod watch: within about a second the cache no longer answers; what it says comes from the API.
    api.watchFaults.set("/api/v1/pods", "silent");
    api.addPod(
      podObject("shop", "web", { proxy: "container", nodeName: "n1", annotations: { "config.linkerd.io/skip-subnets": "10.9.0.0/16" } }),
      {
        quietly: true,
      },
    );
    await until(async () => !(await cached(web)), 5000);
    expect(await askAgent(socket(), { get: "pod", namespace: "shop", name: "web", uid: "uid-shop-web" })).toMatchObject({
      object: { metadata: { annotations: { "config.linkerd.io/skip-subnets": "10.9.0.0/16" } } },
    });
  });

  it("keeps its caches across a new client (a rotated token): no list again; its stop ends every watch and the socket", async () => {
    const running = nodeTasks();
    running.follow(client(), notReady);
    await until(() => requests(/^\/api\/v1\/(pods|nodes)$/, true).length >= 2, 3000);
    const lists = requests(/^\/api\/v1\/(pods|nodes)$/, false).length;
    expect(lists).toBe(2);
    running.follow(client(), notReady);
    await until(() => requests(/^\/api\/v1\/(pods|nodes)$/, true).length >= 6, 5000);
    expect(requests(/^\/api\/v1\/(pods|nodes)$/, false)).toHaveLength(lists);
    // No namespace is watched: a change of one would go to every node.
    expect(requests(/^\/api\/v1\/namespaces$/, true)).toHaveLength(0);
    api.watchFaults.set("/api/v1/nodes", "hang");
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const stopping = performance.now();
    await running.stop();
    tasks = undefined;
    expect(performance.now() - stopping).toBeLessThan(500);
    await until(() => api.watches.openNow("Pod") + api.watches.openNow("Node") === 0, 1000);
    await expect(askAgent(socket(), { get: "namespace", name: "shop" })).rejects.toThrow();
  });

  it("once ready, sweeps through `meshcni sweep`: its request, the node as its caches hold it and its credentials on stdin; counts the report", async () => {
    const report: SweepReport = {
      node: "n1",
      pods: [
        { namespace: "shop", name: "web", uid: "u1", status: "missing", details: ["no redirect"], action: "redirect", result: "done" },
      ],
      summary: { protected: 0, adopted: 0, missing: 1, drifted: 0, unknown: 0 },
      recordsRemoved: { podGone: 1, netnsGone: 0, sandboxGone: 0 },
      backends: { node: "nft", records: { nft: 1 } },
    };
    api.addPod(podObject("shop", "web", { proxy: "container", nodeName: "n1", annotations: { big: "x".repeat(1000) } }));
    const agentClient = client();
    const running = nodeTasks(JSON.stringify(report));
    running.follow(agentClient, notReady);
    await until(() => requests(/^\/api\/v1\/(pods|namespaces)$/, true).length >= 2, 3000);
    running.follow(agentClient, ready);
    await until(async () => (await metrics.registry.getSingleMetric("meshcni_repairs_total")!.get()).values.length > 0, 5000);
    const input = JSON.parse(readFileSync(join(dir, "input.json"), "utf8")) as SweepInput;
    expect(input).toEqual({
      kubeconfig: agentClient.kubeconfig,
      request: {
        node: "n1",
        pods: [],
        policy: "redirect",
        limits: { excludeNamespaces: [], skipUids: [], evictionsLeft: 2, retryMinutes: 10 },
        self: { namespace: "meshcni", name: "agent-x" },
        // The first sweep: no netns read before, the runtime's sandboxes asked.
        seen: [],
        sandboxes: true,
        // Only what a sweep reads: no annotation but Linkerd's.
        view: {
          pods: [expect.objectContaining({ metadata: expect.objectContaining({ name: "web", namespace: "shop", uid: "uid-shop-web" }) })],
          namespaces: [{ metadata: { name: "shop" } }],
        },
        dirs: {
          hostRoot: join(dir, "host"),
          stateDir: "/var/run/meshcni",
          netDir: "/etc/cni/net.d",
          netnsDirs: ["/var/run/netns"],
          criSocket: "auto",
        },
        // The entry it chains: what the sweep holds every pod to, whatever the active config holds.
        entry: expect.objectContaining({
          type: "meshcni",
          kubernetes: { kubeconfig: "/etc/cni/net.d/ZZZ-meshcni-kubeconfig" },
          linkerd: expect.objectContaining({ "incoming-proxy-port": 4143, "outgoing-proxy-port": 4140, "proxy-uid": 2102 }),
        }),
      },
    });
    expect(JSON.stringify(input.request.view)).not.toContain("xxxx");
    const gauge = await metrics.registry.getSingleMetric("meshcni_meshed_pods")!.get();
    expect(gauge.values.find((sample) => sample.labels.status === "missing")?.value).toBe(1);
  });

  it("takes a report that breaks the contract as a standing problem, named once", async () => {
    nodeTasks(JSON.stringify({ node: "n1", pods: [{ name: "web" }] })).follow(client(), ready);
    await until(() => logs.some((entry) => entry.level === "error"), 5000);
    expect(logs.filter((entry) => entry.level === "error").map((entry) => entry.message)).toEqual([
      expect.stringMatching(/^the sweep's report is malformed: pods\[0\]\.namespace: /),
    ]);
  });

  it("lifts the startup taint once ready, and again from a Node deleted and registered anew with it", async () => {
    const running = nodeTasks(
      JSON.stringify({
        node: "n1",
        pods: [],
        summary: { protected: 0, adopted: 0, missing: 0, drifted: 0, unknown: 0 },
        recordsRemoved: { podGone: 0, netnsGone: 0, sandboxGone: 0 },
      }),
    );
    const agentClient = client();
    running.follow(agentClient, notReady);
    await until(() => requests(/^\/api\/v1\/nodes$/, true).length > 0, 3000);
    expect(api.nodes.get("n1")?.spec).toEqual({ taints: [taint] });
    running.follow(agentClient, ready);
    /** The keys of the node's taints, as the API server holds them. */
    const keys = () =>
      ((api.nodes.get("n1")?.spec ?? {}) as { taints?: Array<{ key: string }> }).taints?.map((kept) => kept.key).join() ?? "";
    await until(() => keys() === "", 3000);
    api.deleteNode("n1");
    api.addNode({ metadata: { name: "n1" }, spec: { taints: [{ key: "other", effect: "NoExecute" }, taint] } });
    await until(() => keys() === "other", 5000);
    // Logged once the patch is answered, a moment after the server holds it.
    await until(() => logs.filter((entry) => entry.message === "startup taint removed").length === 2, 3000);
  });
});
