import { join } from "node:path";
import { CoreV1Api, PatchStrategy, setHeaderOptions, type V1Pod, type V1Taint } from "@kubernetes/client-node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { unprotectedLabel } from "../../../src/audit/repair.js";
import { ApiStatusError } from "../../../src/kube/errors.js";
import { createNodeApi } from "../../../src/kube/node-api.js";
import { nodeBindingRefusal } from "../../../src/kube/token-request.js";
import { defaultManifestOptions } from "../../../src/manifests/options.js";
import { renderManifests } from "../../../src/manifests/render.js";
import { FakeApiServer, podObject } from "../../kit/api/server.js";
import { kubeConfigOf } from "../../kit/common.js";

const startupTaint = { key: "meshcni.io/not-ready", effect: "NoSchedule" };
const otherTaint = { key: "dedicated", value: "mesh", effect: "NoExecute" };
const kubeletReady = { type: "Ready", status: "True", reason: "KubeletReady", message: "kubelet is posting ready status" };
const meshcniReady = { type: "MeshcniReady", status: "True", reason: "Ready", message: "meshcni 1 chained in 10-calico.conflist" };

/**
 * The agent's authority, no wider than its node: the ValidatingAdmissionPolicy that
 * `meshcni manifests` renders, enforced by the in-test API server with a real CEL
 * evaluator on what the agent's token sends (its node-name claim: n1).
 */
describe("the agent's ServiceAccount held to its own node", () => {
  let api: FakeApiServer;
  const config = () => kubeConfigOf(api.writeAgentKubeconfig());
  const onNode = (node: string) => createNodeApi(config(), node, "meshcni-test");

  beforeAll(async () => {
    api = await new FakeApiServer().start();
    api.admissionPolicies = renderManifests({ ...defaultManifestOptions, repair: "evict" }).filter((object) =>
      object.kind.startsWith("ValidatingAdmissionPolicy"),
    );
  });
  afterAll(() => api.stop());
  beforeEach(() => {
    for (const map of [api.pods, api.nodes]) map.clear();
    api.events.length = 0;
    api.agentUser = { username: "system:serviceaccount:meshcni:meshcni", node: "n1" };
    api.authorizeAs({ repair: "evict", startupTaint: "meshcni.io/not-ready:NoSchedule" });
    api.nodeBoundTokens = true;
    for (const name of ["n1", "n2"])
      api.addNode({
        metadata: { name, labels: { zone: "a" } },
        spec: { taints: [otherTaint, startupTaint] },
        status: { conditions: [kubeletReady] },
      });
    api.addPod(podObject("shop", "web", { nodeName: "n1" }));
    api.addPod(podObject("shop", "elsewhere", { nodeName: "n2" }));
  });

  const lift = async (node: string, taints: V1Taint[] = [otherTaint]) => {
    const api = onNode(node);
    const { resourceVersion } = await api.nodeTaints();
    return api.setNodeTaints(taints, resourceVersion);
  };

  it("lifts the startup taint from its own Node, and may change nothing else there", async () => {
    await lift("n1");
    expect(api.nodes.get("n1")?.spec).toEqual({ taints: [otherTaint] });
    await expect(lift("n1", [])).rejects.toThrow(
      "ValidatingAdmissionPolicy 'meshcni-node-scope' with binding 'meshcni-node-scope' denied request: meshcni's agent may change only the startup taint meshcni.io/not-ready on its Node",
    );
    await expect(lift("n1", [otherTaint, { key: "evil", effect: "NoSchedule" }])).rejects.toMatchObject({ code: 422 });
    expect(api.nodes.get("n1")?.spec).toEqual({ taints: [otherTaint] });
  });

  it("cannot taint or untaint another Node", async () => {
    await expect(lift("n2")).rejects.toThrow("meshcni's agent may change only its own Node");
    expect(api.nodes.get("n2")?.spec).toEqual({ taints: [otherTaint, startupTaint] });
  });

  it("sets its own Node's MeshcniReady condition, and no other condition, nor another Node's", async () => {
    await onNode("n1").setNodeCondition(meshcniReady);
    expect(api.nodeConditions("n1")).toEqual([kubeletReady, meshcniReady]);
    await expect(onNode("n1").setNodeCondition({ ...kubeletReady, status: "False" })).rejects.toThrow(
      "meshcni's agent may change only the MeshcniReady condition of its Node's status",
    );
    await expect(onNode("n2").setNodeCondition(meshcniReady)).rejects.toThrow("meshcni's agent may change only its own Node");
    expect(api.nodeConditions("n2")).toEqual([kubeletReady]);
  });

  it("labels its own node's pods with meshcni's label only; never another node's pod, never another label", async () => {
    const node = onNode("n1");
    const pod = (name: string) => api.pods.get(`shop/${name}`) as V1Pod;
    await node.labelPod(pod("web"), unprotectedLabel, "true");
    expect(api.pods.get("shop/web")?.metadata?.labels).toMatchObject({ [unprotectedLabel]: "true" });
    await expect(node.labelPod(pod("elsewhere"), unprotectedLabel, "true")).rejects.toThrow("may change only pods on its own node");
    await expect(node.labelPod(pod("web"), "app", "evil")).rejects.toThrow(`may change only the ${unprotectedLabel} label of a pod`);
    expect(api.pods.get("shop/elsewhere")?.metadata?.labels ?? {}).not.toHaveProperty(unprotectedLabel);
  });

  it("may not change the rest of its Node (status fields, finalizers, owner references, spec) nor a pod's finalizers", async () => {
    const core = config().makeApiClient(CoreV1Api);
    const merge = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
    const strategic = setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch);
    const refusal = (patching: Promise<unknown>) =>
      patching.then(
        () => "accepted",
        (error: { code?: number; body?: string }) => `${error.code} ${error.body}`,
      );
    const capacity = { status: { capacity: { "example.com/dongle": "1" } } };
    expect(await refusal(core.patchNodeStatus({ name: "n1", body: capacity }, strategic))).toMatch(
      /^422 .*may change only the MeshcniReady condition/s,
    );
    for (const body of [
      { metadata: { finalizers: ["example.com/hold"] } },
      { metadata: { ownerReferences: [{ apiVersion: "v1", kind: "Node", name: "n2", uid: "u" }] } },
      { spec: { providerID: "evil://node" } },
    ])
      expect(await refusal(core.patchNode({ name: "n1", body }, merge))).toMatch(/^422 .*may not change its Node's finalizers/s);
    const finalizer = { metadata: { finalizers: ["example.com/hold"] } };
    expect(await refusal(core.patchNamespacedPod({ namespace: "shop", name: "web", body: finalizer }, merge))).toMatch(
      new RegExp(`^422 .*may change only the ${unprotectedLabel} label`, "s"),
    );
    expect(api.nodes.get("n1")?.metadata).not.toHaveProperty("finalizers");
    expect(api.pods.get("shop/web")?.metadata).not.toHaveProperty("finalizers");
  });

  it("with --evict-namespaces, evicts only in those namespaces", async () => {
    const policies = api.admissionPolicies;
    api.admissionPolicies = renderManifests({ ...defaultManifestOptions, repair: "evict", evictNamespaces: ["web"] }).filter((object) =>
      object.kind.startsWith("ValidatingAdmissionPolicy"),
    );
    try {
      api.addPod(podObject("web", "front", { nodeName: "n1" }));
      await expect(onNode("n1").evictPod(api.pods.get("shop/web") as V1Pod)).rejects.toThrow(
        "meshcni's agent may evict pods only in web (--evict-namespaces)",
      );
      expect(api.deleting("shop", "web")).toBe(false);
      await onNode("n1").evictPod(api.pods.get("web/front") as V1Pod);
      expect(api.deleting("web", "front")).toBe(true);
    } finally {
      api.admissionPolicies = policies;
    }
  });

  it("reports Events only about pods and as its own node; mints no token living longer than its --plugin-token-seconds", async () => {
    const event = { reason: "MeshRedirectMissing", action: "None", message: "m", type: "Warning" } as const;
    await onNode("n1").createPodEvent(api.pods.get("shop/web") as V1Pod, event);
    expect(api.events.map((created) => created.reportingInstance)).toEqual(["n1"]);
    // The same token claiming another node's name for its Events (as a stolen one would, to be believed for that node's pods).
    await expect(onNode("n2").createPodEvent(api.pods.get("shop/elsewhere") as V1Pod, event)).rejects.toThrow(
      "meshcni's agent may report Events only about pods, and only as its own node",
    );
    expect(api.events).toHaveLength(1);
    await expect(onNode("n1").mintToken("meshcni", "meshcni-plugin", 7200)).rejects.toThrow(
      "meshcni's agent may mint tokens valid for at most 3600 s (its --plugin-token-seconds)",
    );
    expect((await onNode("n1").mintToken("meshcni", "meshcni-plugin", 3600)).boundToNode).toBe(true);
  });

  it("writes nothing at all with a token that names no node (not a projected token of a pod on a node)", async () => {
    api.agentUser = { username: "system:serviceaccount:meshcni:meshcni", node: undefined };
    await expect(lift("n1")).rejects.toThrow("acts only with a token bound to its pod on a node");
    await expect(onNode("n1").evictPod(api.pods.get("shop/web") as V1Pod)).rejects.toThrow("acts only with a token bound");
    expect(api.deleting("shop", "web")).toBe(false);
  });

  it("mints the plugin's token bound to its Node: it stops working once the Node is deleted, even if registered anew", async () => {
    const minted = await onNode("n1").mintToken("meshcni", "meshcni-plugin", 600);
    expect(minted.boundToNode).toBe(true);
    expect(api.minted.get(minted.token)?.boundNode?.name).toBe("n1");
    const plugin = createNodeApi(kubeConfigOf(api.writeKubeconfig(join(api.dir, "plugin-kubeconfig"), minted.token)), "n1");
    expect((await plugin.readPod("shop", "web")).metadata?.name).toBe("web");
    api.deleteNode("n1");
    api.addNode({ metadata: { name: "n1" }, spec: {} });
    await expect(plugin.readPod("shop", "web")).rejects.toMatchObject({ code: 401 });
  });

  it("mints an unbound token where the server cannot bind to Nodes (400: the ServiceAccountTokenNodeBinding gate off, before 1.31)", async () => {
    api.nodeBoundTokens = false;
    const node = onNode("n1");
    const minted = await node.mintToken("meshcni", "meshcni-plugin", 600);
    expect(minted.boundToNode).toBe(false);
    expect(api.minted.get(minted.token)?.boundNode).toBeUndefined();
    // It asks once: the next mint is unbound at once.
    const before = api.requests.length;
    await node.mintToken("meshcni", "meshcni-plugin", 600);
    expect(api.requests.length - before).toBe(1);
  });

  it("knows whether the policy binds it: refused under it, accepted when the ServiceAccount is renamed, unsupported before 1.30", async () => {
    const status = () => JSON.stringify(api.nodes.get("n1")?.status);
    const before = status();
    await expect(onNode("n1").probeNodeScope()).resolves.toBe("bound");
    // A stolen token of another node's agent is held too: refused as "only its own Node".
    api.agentUser = { username: "system:serviceaccount:meshcni:meshcni", node: "n2" };
    await expect(onNode("n1").probeNodeScope()).resolves.toBe("bound");
    // A kustomize namePrefix: the policy matches nobody, and the server serves policies.
    api.agentUser = { username: "system:serviceaccount:meshcni:staging-meshcni", node: "n1" };
    api.addServiceAccount("meshcni", "staging-meshcni");
    api.authorizeAs({ repair: "evict" }, "staging-");
    await expect(onNode("n1").probeNodeScope()).resolves.toBe("unbound");
    const policies = api.admissionPolicies;
    api.admissionPolicies = [];
    try {
      await expect(onNode("n1").probeNodeScope()).resolves.toBe("unsupported");
      api.servesAdmissionPolicies = true;
      await expect(onNode("n1").probeNodeScope()).resolves.toBe("unbound");
    } finally {
      api.admissionPolicies = policies;
      api.servesAdmissionPolicies = undefined;
    }
    // Dry runs all: nothing stored.
    expect(status()).toBe(before);
    await expect(onNode("n3").probeNodeScope()).rejects.toMatchObject({ code: 404 });
  });

  it("mints unbound only while the server does not know the Node (404), and bound again once it is registered", async () => {
    api.agentUser = { username: "system:serviceaccount:meshcni:meshcni", node: "n-gone" };
    const node = onNode("n-gone");
    const unbound = await node.mintToken("meshcni", "meshcni-plugin", 600);
    expect(unbound.boundToNode).toBe(false);
    api.addNode({ metadata: { name: "n-gone" }, spec: {} });
    const bound = await node.mintToken("meshcni", "meshcni-plugin", 600);
    expect(bound.boundToNode).toBe(true);
    expect(api.minted.get(bound.token)?.boundNode?.name).toBe("n-gone");
  });
});

describe("nodeBindingRefusal", () => {
  const refusal = (code: number, message: string) => nodeBindingRefusal(new ApiStatusError(code, message, undefined));
  it("reads kube-apiserver's answers to a Node binding it cannot make", () => {
    expect(refusal(400, 'cannot bind token to a Node object as the "ServiceAccountTokenNodeBinding" feature-gate is disabled')).toBe(
      "unsupported",
    );
    expect(refusal(422, 'spec.boundObjectRef.kind: Unsupported value: "Node": supported values: "Pod", "Secret"')).toBe("unsupported");
    expect(refusal(404, 'nodes "n1" not found')).toBe("unknown-node");
    // Other refusals are not about the binding: they are not worked around.
    expect(refusal(400, "the server rejected our request")).toBeUndefined();
    expect(refusal(403, "forbidden")).toBeUndefined();
    expect(refusal(422, "spec.expirationSeconds: Invalid value")).toBeUndefined();
  });
});
