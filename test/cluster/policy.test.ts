import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, expect, it } from "vitest";
import { RealCluster } from "../kit/cluster/cluster.js";
import { nodeName, startupTaint } from "../kit/cluster/layout.js";
import { bindsTokensToNodes, currentLeg } from "../kit/cluster/leg.js";
import { Meshcni, nodeFlags, renderManifests } from "../kit/cluster/meshcni.js";
import { AgentIdentity } from "../kit/cluster/tokens.js";
import { until } from "../kit/common.js";
import { meshcniBinary } from "../kit/paths.js";
import { describeAsRoot } from "../kit/root-suites.js";

const otherNode = "node-2";
const denied = /denied request: meshcni's agent may/;

/**
 * The node-scope ValidatingAdmissionPolicy, enforced by the real API server against the
 * agent's real projected token (RBAC grants its verbs cluster-wide; the policy holds them
 * to its own node): checked as installed, then again after a kustomize overlay moved the
 * manifests to another namespace.
 */
describeAsRoot("the agent's authority on a real cluster", () => {
  const cluster = new RealCluster();
  const overlayDir = mkdtempSync(join(tmpdir(), "meshcni-overlay-"));

  beforeAll(async () => {
    await cluster.up();
    // Another node (never joined: a kubelet-less Node object) and a pod bound to it.
    await cluster.kubectl(["apply", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "Node", metadata: { name: otherNode } }));
    const foreign = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "foreign" },
      spec: { nodeName: otherNode, containers: [{ name: "c", image: "x" }] },
    };
    const local = { ...foreign, metadata: { name: "local" }, spec: { ...foreign.spec, nodeName } };
    const system = { ...foreign, metadata: { name: "system", namespace: "kube-system" } };
    await cluster.kubectl(["apply", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "List", items: [foreign, local, system] }));
  }, 300_000);

  afterAll(async () => {
    await cluster.down();
    rmSync(overlayDir, { recursive: true, force: true });
  }, 120_000);

  /** A kustomize overlay of the rendered base with one change (`namespace: …`, `namePrefix: …`), applied; its dir. */
  const applyOverlay = async (name: string, change: string) => {
    const dir = join(overlayDir, name);
    mkdirSync(dir);
    const kustomization = `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n${change}\nresources:\n  - ../base\n`;
    writeFileSync(join(dir, "kustomization.yaml"), kustomization);
    await cluster.kubectl(["apply", "-k", dir]);
    return dir;
  };

  /** What the agent's token may and may not do, in whatever namespace the manifests were put. */
  const scenario = async (meshcni: Meshcni) => {
    const agent = await AgentIdentity.of(cluster, meshcni);
    // Another Node, a label on its own, the startup taint with another effect, another condition: refused.
    expect(await agent.kubectl("label", "node", otherNode, "x=y")).toMatch(/its own Node/);
    expect(await agent.kubectl("label", "node", nodeName, "x=y")).toMatch(denied);
    expect(await agent.kubectl("taint", "node", nodeName, `${startupTaint}:NoExecute`)).toMatch(/only with its effect NoSchedule/);
    const condition = async (type: string) => {
      const patch = { status: { conditions: [{ type, status: "True", reason: "Test", message: "t" }] } };
      const answer = await agent.request("PATCH", `/api/v1/nodes/${nodeName}/status`, patch, "application/strategic-merge-patch+json");
      return `${answer.code} ${answer.body}`;
    };
    expect(await condition("Ready")).toMatch(/^422 .*may change only the MeshcniReady condition/s);
    // Nothing else of its Node's status, metadata or spec, nor a pod's finalizers.
    const capacity = { status: { capacity: { "example.com/dongle": "1" } } };
    const extended = await agent.request("PATCH", `/api/v1/nodes/${nodeName}/status`, capacity, "application/strategic-merge-patch+json");
    expect(`${extended.code} ${extended.body}`).toMatch(/^422 .*may change only the MeshcniReady condition/s);
    const patch = (kind: string, name: string, body: object) => agent.kubectl("patch", kind, name, "-p", JSON.stringify(body));
    expect(await patch("node", nodeName, { metadata: { finalizers: ["example.com/hold"] } })).toMatch(
      /may not change its Node's finalizers/,
    );
    expect(await patch("node", nodeName, { spec: { providerID: "evil://node" } })).toMatch(/may not change its Node's finalizers/);
    expect(await patch("pod", "local", { metadata: { finalizers: ["example.com/hold"] } })).toMatch(
      /only the meshcni.io\/unprotected label/,
    );
    // Another node's pod, or anything but meshcni's label of its own node's pods: refused.
    expect(await agent.kubectl("label", "pod", "foreign", "meshcni.io/unprotected=true")).toMatch(/only pods on its own node/);
    expect(await agent.kubectl("label", "pod", "local", "app=other")).toMatch(denied);
    // An eviction with a grace period of its own choosing, or of a system namespace's pod: refused.
    const evict = async (namespace: string, name: string, deleteOptions?: object) => {
      const body = {
        apiVersion: "policy/v1",
        kind: "Eviction",
        metadata: { name, namespace },
        ...(deleteOptions ? { deleteOptions } : {}),
      };
      const answer = await agent.request("POST", `/api/v1/namespaces/${namespace}/pods/${name}/eviction`, body, "application/json");
      return `${answer.code} ${answer.body}`;
    };
    expect(await evict("default", "local", { gracePeriodSeconds: 0 })).toMatch(/^422 .*only with the pod's own grace period/s);
    expect(await evict("kube-system", "system", {})).toMatch(/^422 .*may not evict pods of kube-system/s);
    // A plugin token bound to another Node, or living longer than the agent asks (an hour): refused.
    const token = (...args: string[]) => agent.kubectl("create", "token", "meshcni-plugin", "-n", meshcni.namespace, ...args);
    // Before 1.31 the server binds no token to a Node (and kubectl will not ask it to): there is none to refuse.
    if (bindsTokensToNodes(currentLeg()))
      expect(await token("--bound-object-kind", "Node", "--bound-object-name", otherNode)).toMatch(/bound only to its own Node/);
    expect(await token("--duration", "2h")).toMatch(/valid for at most 3600 s \(its --plugin-token-seconds\)/);
    // An Event reported as another node (to be believed about that node's pods), or about something else than a pod: refused.
    const event = async (instance: string, kind = "Pod") => {
      const body = {
        metadata: { generateName: "local.", namespace: "default" },
        involvedObject: { apiVersion: "v1", kind, name: "local", namespace: "default" },
        reason: "MeshRedirectMissing",
        message: "m",
        type: "Warning",
        source: { component: "meshcni", host: instance },
        reportingComponent: "meshcni",
        reportingInstance: instance,
      };
      const answer = await agent.request("POST", "/api/v1/namespaces/default/events", body, "application/json");
      return `${answer.code} ${answer.body}`;
    };
    expect(await event(otherNode)).toMatch(/^422 .*only about pods, and only as its own node/s);
    expect(await event(nodeName, "ConfigMap")).toMatch(/^422 .*only about pods, and only as its own node/s);
    expect(await event(nodeName)).toMatch(/^201 /);
    // Its own taint, condition, pods' label and a token bound to its own Node: allowed.
    expect(await condition("MeshcniReady")).toMatch(/^200 /);
    expect(await agent.kubectl("label", "pod", "local", "meshcni.io/unprotected=true")).toMatch(/labeled/);
    if (bindsTokensToNodes(currentLeg()))
      expect(await token("--bound-object-kind", "Node", "--bound-object-name", nodeName, "--duration", "1h")).toMatch(/^ey/);
    expect(await token("--duration", "1h")).toMatch(/^ey/);
    expect(await agent.kubectl("taint", "node", nodeName, `${startupTaint}:NoSchedule`)).toMatch(/tainted/);
    // The agent is ready: it lifts the taint put back.
    await until(
      async () => !(await cluster.kubectl(["get", "node", nodeName, "-o", "jsonpath={.spec.taints}"])).includes(startupTaint),
      30_000,
      250,
    );
    await cluster.kubectl(["label", "pod", "local", "meshcni.io/unprotected-"]);
  };

  it("holds the agent's token to its own node: denied elsewhere, allowed for its taint, condition, label and token; no eviction with a grace period of its own or in a system namespace", async () => {
    const meshcni = new Meshcni(cluster);
    await meshcni.deploy(["--repair", "evict", "--evict-namespaces", "*"]);
    await scenario(meshcni);
  }, 240_000);

  it("holds it the same after a kustomize overlay moved the manifests to another namespace", async () => {
    // The install above removed first, as an operator moving it would.
    await cluster.kubectl(
      ["delete", "-f", "-", "--wait", "--ignore-not-found"],
      await renderManifests(["--repair", "evict", "--evict-namespaces", "*"]),
    );
    const base = join(overlayDir, "base");
    mkdirSync(base);
    await execa(meshcniBinary, ["manifests", ...nodeFlags, "--repair", "evict", "--evict-namespaces", "*", "--output-dir", base]);
    await applyOverlay("overlay", "namespace: mesh-system");
    const meshcni = new Meshcni(cluster, "mesh-system");
    await meshcni.rolledOut();
    await scenario(meshcni);
  }, 240_000);

  it("with --evict-namespaces, refuses the agent's evictions in any other namespace", async () => {
    await cluster.kubectl(["delete", "-k", join(overlayDir, "overlay"), "--wait", "--ignore-not-found"]);
    const meshcni = new Meshcni(cluster);
    await meshcni.deploy(["--repair", "evict", "--evict-namespaces", "shop"]);
    const agent = await AgentIdentity.of(cluster, meshcni);
    const body = { apiVersion: "policy/v1", kind: "Eviction", metadata: { name: "local", namespace: "default" } };
    const answer = await agent.request("POST", "/api/v1/namespaces/default/pods/local/eviction", body, "application/json");
    expect(`${answer.code} ${answer.body}`).toMatch(/^422 .*may evict pods only in shop \(--evict-namespaces\)/s);
    expect(await meshcni.containerField<string[]>("args")).toEqual(expect.arrayContaining(["--evict-namespaces", "shop"]));
    await cluster.kubectl(
      ["delete", "-f", "-", "--wait", "--ignore-not-found"],
      await renderManifests(["--repair", "evict", "--evict-namespaces", "shop"]),
    );
  }, 240_000);

  it("says not ready, PolicyNotBound in its Node's condition, after an overlay renamed its ServiceAccount past the policy", async () => {
    const renamed = await applyOverlay("renamed", "namePrefix: staging-");
    // Not ready for two reasons: the policy, and the plugin's ServiceAccount renamed too (the agent mints for meshcni-plugin).
    const condition = async () =>
      cluster.kubectl(["get", "node", nodeName, "-o", 'jsonpath={.status.conditions[?(@.type=="MeshcniReady")].message}']);
    await until(async () => (await condition()).includes("does not hold this agent's ServiceAccount to its node"), 120_000, 500);
    expect(await cluster.kubectl(["get", "node", nodeName, "-o", 'jsonpath={.status.conditions[?(@.type=="MeshcniReady")].status}'])).toBe(
      "False",
    );
    // The agent's token, unheld, could label any Node: the condition is all that stands between that and nobody knowing.
    const meshcni = new Meshcni(cluster);
    const agent = await AgentIdentity.of(cluster, meshcni);
    expect(await agent.kubectl("label", "node", otherNode, "x=y", "--dry-run=server")).toMatch(/labeled/);
    await cluster.kubectl(["delete", "-k", renamed, "--wait", "--ignore-not-found"]);
  }, 240_000);
});
