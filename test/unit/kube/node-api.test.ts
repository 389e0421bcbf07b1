import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createNodeApi, type NodeApi } from "../../../src/kube/node-api.js";
import { FakeApiServer, podObject } from "../../kit/api/server.js";
import { kubeConfigOf } from "../../kit/common.js";

/** What the agent and the sweeps do with the API, for one node, against the in-test API server. */
describe("the node API", () => {
  let api: FakeApiServer;
  let node: NodeApi;

  beforeAll(async () => {
    // The node API is the agent's with every repair turned on: evict's RBAC (labels, evictions) and the startup taint's.
    api = (await new FakeApiServer().start()).authorizeAs({ repair: "evict" });
    node = createNodeApi(kubeConfigOf(api.writeAgentKubeconfig()), "n1", "meshcni-test");
  });
  afterAll(() => api.stop());
  beforeEach(() => {
    for (const map of [api.pods, api.nodes, api.daemonSets]) map.clear();
    api.faults.clear();
    api.events.length = 0;
    api.addPod(podObject("shop", "web", { nodeName: "n1", owned: true }));
    api.addPod(podObject("shop", "elsewhere", { nodeName: "n2" }));
  });

  it("lists and reads only through the node's field selector; reads a pod and a namespace by name", async () => {
    expect((await node.listPods()).map((pod) => pod.metadata?.name)).toEqual(["web"]);
    expect(api.requestsTo("GET", /^\/api\/v1\/pods$/).at(-1)?.query.fieldSelector).toBe("spec.nodeName=n1");
    expect((await node.readPod("shop", "elsewhere")).metadata?.uid).toBe("uid-shop-elsewhere");
    api.addNamespace({ metadata: { name: "shop", annotations: { a: "b" } } });
    expect((await node.readNamespace("shop")).metadata?.annotations).toEqual({ a: "b" });
  });

  it("mints a ServiceAccount's token, its life the server's grant on the server's own clock, however far off ours", async () => {
    api.now = () => Date.parse("2030-01-01T00:00:00Z");
    const minted = await node.mintToken("meshcni", "meshcni-plugin", 600);
    api.now = () => Date.now() - 2 * 3600_000;
    const behind = await node.mintToken("meshcni", "meshcni-plugin", 3600);
    api.now = () => Date.now();
    expect(api.minted.get(minted.token)?.serviceAccount).toBe("meshcni/meshcni-plugin");
    expect(minted).toMatchObject({ validForMs: 600_000, serverNow: Date.parse("2030-01-01T00:00:00Z") });
    // The Date header counts whole seconds.
    expect(behind.validForMs).toBeGreaterThan(3599_000);
    expect(behind.validForMs).toBeLessThanOrEqual(3601_000);
    expect(Date.now() - behind.serverNow!).toBeGreaterThan(2 * 3600_000 - 2000);
  });

  it("creates an Event on the pod naming meshcni and the node, and labels a pod by merge patch", async () => {
    const pod = await node.readPod("shop", "web");
    await node.createPodEvent(pod, { reason: "MeshRedirectMissing", action: "WriteRedirect", message: "m", type: "Warning" });
    expect(api.events[0]).toMatchObject({
      involvedObject: { kind: "Pod", name: "web", namespace: "shop", uid: "uid-shop-web" },
      reason: "MeshRedirectMissing",
      action: "WriteRedirect",
      source: { component: "meshcni-test", host: "n1" },
      reportingInstance: "n1",
    });
    await node.labelPod(pod, "meshcni.io/unprotected", "true");
    expect(api.pods.get("shop/web")?.metadata).toMatchObject({ labels: { "meshcni.io/unprotected": "true" } });
  });

  it("evicts through the Eviction API with the pod's UID as precondition; a PodDisruptionBudget's 429 is 'blocked'", async () => {
    const pod = await node.readPod("shop", "web");
    api.disruptionBudgetBlocks.add("shop/web");
    expect(await node.evictPod(pod)).toBe("blocked");
    api.disruptionBudgetBlocks.clear();
    api.addPod({ ...podObject("shop", "web", { nodeName: "n1" }), metadata: { ...podObject("shop", "web").metadata, uid: "a-new-pod" } });
    await expect(node.evictPod(pod)).rejects.toThrow();
    expect(api.deleting("shop", "web")).toBe(false);
    // As kube-apiserver: the pod is marked, with its grace period, and stays until its kubelet removes it.
    api.terminatingMs = undefined;
    expect(await node.evictPod(await node.readPod("shop", "web"))).toBe("evicted");
    expect(api.pods.get("shop/web")?.metadata).toMatchObject({ deletionTimestamp: expect.any(String), deletionGracePeriodSeconds: 30 });
    api.terminatingMs = 0;
  });

  it("reads which DaemonSet owns a pod and its ServiceAccount (a 404 throws), and tells whether a DaemonSet is present, deleted or denied", async () => {
    const agent = podObject("meshcni", "agent-x", { daemonSet: "meshcni" });
    api.addPod({ ...agent, spec: { ...(agent.spec as object), serviceAccountName: "linkerd-cni" } });
    api.addPod(podObject("meshcni", "bare"));
    expect(await node.ownersOf("meshcni", "agent-x")).toEqual({ daemonSet: "meshcni", serviceAccount: "linkerd-cni" });
    expect(await node.ownersOf("meshcni", "bare")).toEqual({ daemonSet: null, serviceAccount: "default" });
    await expect(node.ownersOf("meshcni", "gone")).rejects.toMatchObject({ code: 404 });
    expect(await node.daemonSetState("meshcni", "meshcni")).toBe("deleted");
    api.addDaemonSet("meshcni", "meshcni");
    expect(await node.daemonSetState("meshcni", "meshcni")).toBe("present");
    api.faults.set("/apis/apps/v1/namespaces/meshcni/daemonsets/meshcni", { status: 403 });
    expect(await node.daemonSetState("meshcni", "meshcni")).toBe("denied");
    api.faults.set("/apis/apps/v1/namespaces/meshcni/daemonsets/meshcni", { status: 500 });
    await expect(node.daemonSetState("meshcni", "meshcni")).rejects.toThrow();
  });

  it("replaces the node's taints only if the node is unchanged since it was read", async () => {
    api.addNode({ metadata: { name: "n1" }, spec: { taints: [{ key: "other", effect: "NoSchedule" }] } });
    const { taints, resourceVersion } = await node.nodeTaints();
    expect(taints).toEqual([{ key: "other", effect: "NoSchedule" }]);
    await node.setNodeTaints([], resourceVersion);
    expect((await node.nodeTaints()).taints).toEqual([]);
    await expect(node.setNodeTaints([{ key: "stale", effect: "NoSchedule" }], resourceVersion)).rejects.toThrow();
    expect((await node.nodeTaints()).taints).toEqual([]);
  });
});
