import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentHarness } from "../kit/agent.js";
import { FakeApiServer, type PodOptions, podObject } from "../kit/api-server.js";
import { agentTemplate, deleteLoopbackRule, isRoot, loopbackRule, sleep } from "../kit/common.js";
import { TestNetwork } from "../kit/network.js";

const node = "node-r";
const taint = { key: "meshcni.io/not-ready", effect: "NoSchedule" };
const otherTaint = { key: "dedicated", value: "mesh", effect: "NoExecute" };

/**
 * A node where pods started before meshcni was chained (the node-start race): the agent
 * comes up, lifts the startup taint, finds those pods with `meshcni audit`, emits an
 * Event for each and repairs them by policy.
 */
function scenario(policy: "delete" | "label" | "none", subnet: number) {
  const api = new FakeApiServer();
  const net = new TestNetwork(subnet);
  let host: AgentHarness;
  const agentDirs = () => ({ conf: host.netDir, bin: host.binDir });

  const startPod = async (name: string, via: "plain" | "agent", options: PodOptions = {}) =>
    (
      await net.startPod(api, {
        namespace: "shop",
        name,
        network: via === "plain" ? "plain" : "primary",
        node,
        options,
        ...(via === "plain" ? {} : { dirs: agentDirs() }),
      })
    ).netns;

  const eventsFor = (name: string) => api.events.filter((event) => (event.involvedObject as { name: string }).name === name);
  const setup = async (auditSeconds = 60) => {
    host = new AgentHarness({ onHost: true });
    await api.start();
    api.addNode({ metadata: { name: node }, spec: { taints: [otherTaint, taint] } });
    writeFileSync(join(net.confDir, "plain.conflist"), JSON.stringify(net.primaryConflist("plain")));
    writeFileSync(host.path("10-primary.conflist"), JSON.stringify(net.primaryConflist("primary")));
    // Pods that started before the agent chained meshcni.
    await startPod("owned-early", "plain", { owned: true });
    await startPod("bare-early", "plain");
    await startPod("leaving", "plain", { owned: true, deleting: true });
    api.addPod(podObject("meshcni", "agent-self", { proxy: "container", nodeName: node, podIP: "10.251.0.250", owned: true }));
    await host.startWithApi(
      api,
      [
        "--template",
        agentTemplate(net.stateDir),
        "--node",
        node,
        "--repair",
        policy,
        "--state-dir",
        net.stateDir,
        "--startup-taint",
        "meshcni.io/not-ready:NoSchedule",
        "--audit-seconds",
        String(auditSeconds),
      ],
      { POD_NAMESPACE: "meshcni", POD_NAME: "agent-self" },
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
    startPod,
    eventsFor,
    setup,
    teardown,
  };
}

describe.skipIf(!isRoot)("the agent's repair, policy delete", () => {
  const s = scenario("delete", 50);
  beforeAll(() => s.setup(1));
  afterAll(() => s.teardown());

  it("removes the startup taint once ready, keeping the node's other taints", async () => {
    await s.host.waitFor(() => s.host.logs.some((line) => line.msg === "startup taint removed"), 10_000);
    expect((s.api.nodes.get(node)!.spec as { taints: unknown[] }).taints).toEqual([otherTaint]);
    expect(s.api.requestsTo("PATCH", /^\/api\/v1\/nodes\/node-r$/)[0]!.body).toContainEqual({
      op: "test",
      path: "/metadata/resourceVersion",
      value: expect.any(String),
    });
  });

  it("emits MeshRedirectMissing and deletes a pod that started without meshcni and has a controller", async () => {
    await s.host.waitFor(() => s.api.requestsTo("DELETE", /\/pods\/owned-early$/).length === 1, 10_000);
    const [event] = s.eventsFor("owned-early");
    expect(event).toMatchObject({
      reason: "MeshRedirectMissing",
      type: "Warning",
      involvedObject: { kind: "Pod", namespace: "shop", uid: "uid-shop-owned-early" },
    });
    expect(event!.message).toContain("started without meshcni's iptables redirect");
    expect(event!.message).toContain("deletes it so its controller recreates it");
    expect(s.api.requestsTo("DELETE", /\/pods\/owned-early$/)[0]!.body).toMatchObject({ preconditions: { uid: "uid-shop-owned-early" } });
  });

  it("labels, never deletes, a pod without a controller", async () => {
    await s.host.waitFor(() => s.api.requestsTo("PATCH", /\/pods\/bare-early$/).length === 1, 10_000);
    expect(s.api.requestsTo("PATCH", /\/pods\/bare-early$/)[0]!.body).toEqual({
      metadata: { labels: { "meshcni.io/unprotected": "true" } },
    });
    expect(s.eventsFor("bare-early")[0]!.message).toContain("no controller would recreate it");
    expect(s.api.requestsTo("DELETE", /\/pods\/bare-early$/)).toEqual([]);
  });

  it("detects a pod started without meshcni after the agent is up, and says how long it took", async () => {
    await s.startPod("late", "plain", { owned: true });
    const runningAt = performance.now(); // the pod has its IP in the API: its sandbox's network is up
    await s.host.waitFor(() => s.eventsFor("late").length === 1, 10_000);
    const eventAt = s.api
      .requestsTo("POST", /\/events$/)
      .find((request) => (request.body as { involvedObject: { name: string } }).involvedObject.name === "late")!.at;
    expect(eventAt).toBeGreaterThan(runningAt);
    process.stdout.write(`\ndetection: pod running in the API -> MeshRedirectMissing event: ${Math.round(eventAt - runningAt)} ms\n`);
    await s.host.waitFor(() => s.api.requestsTo("DELETE", /\/pods\/late$/).length === 1, 10_000);
  });

  it("finds a protected pod's redirect drifted once a rule is deleted by hand", async () => {
    const netns = await s.startPod("drifting", "agent", { owned: true });
    await sleep(1500);
    expect(s.eventsFor("drifting")).toEqual([]);
    await deleteLoopbackRule(netns);
    await s.host.waitFor(() => s.eventsFor("drifting").length === 1, 10_000);
    expect(s.eventsFor("drifting")[0]!.message).toContain(
      `differs from meshcni's plan (ipv4: PROXY_INIT_OUTPUT: missing rule: ${loopbackRule}`,
    );
  });

  it("never acts on its own pod, a pod being deleted, or twice on one pod", async () => {
    await sleep(2500); // two more periodic audits
    expect(s.eventsFor("agent-self")).toEqual([]);
    expect(s.eventsFor("leaving")).toEqual([]);
    expect(s.api.requestsTo("DELETE", /\/pods\/leaving$/)).toEqual([]);
    expect(s.eventsFor("bare-early")).toHaveLength(1);
    expect(s.api.requestsTo("PATCH", /\/pods\/bare-early$/)).toHaveLength(1);
    expect(await s.host.metric('meshcni_unprotected_pods_total{status="missing"}')).toBe(3);
    expect(await s.host.metric('meshcni_repairs_total{action="delete"}')).toBe(3);
  });
});

describe.skipIf(!isRoot).each([
  ["label", 51, "PATCH"],
  ["none", 52, undefined],
] as const)("the agent's repair, policy %s", (policy, subnet, method) => {
  const s = scenario(policy, subnet);
  beforeAll(() => s.setup());
  afterAll(() => s.teardown());

  it(`emits the event and ${method ? "labels" : "leaves"} a pod with a controller, deleting nothing`, async () => {
    await s.host.waitFor(() => s.eventsFor("owned-early").length === 1, 10_000);
    await sleep(300);
    expect(s.api.requestsTo("DELETE", /\/pods\//)).toEqual([]);
    expect(s.api.requestsTo("PATCH", /\/pods\/owned-early$/)).toHaveLength(method ? 1 : 0);
    expect(s.eventsFor("owned-early")[0]!.message).toContain(
      policy === "none" ? "takes no action" : "labels it meshcni.io/unprotected=true",
    );
  });
});
