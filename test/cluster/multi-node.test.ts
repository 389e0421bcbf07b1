import { copyFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { imageRepository } from "../../src/build-info.js";
import { answersFromPod, chainedEntry, cordon, meshcniState, nodesWithReadyAgent, runningPods } from "../kit/cluster/across-nodes.js";
import { agentUser, auditEvents, requestNode } from "../kit/cluster/audit.js";
import { hostPort } from "../kit/cluster/families.js";
import { otherBuild, otherBuildArchive } from "../kit/cluster/images.js";
import { bindsTokensToNodes, currentLeg } from "../kit/cluster/leg.js";
import { agentCommit, Meshcni } from "../kit/cluster/meshcni.js";
import { drainAndRejoin, nodeAddedThenDeleted, spreadAcrossNodes } from "../kit/cluster/multi-node-scenarios.js";
import { nodeLayout, onHost } from "../kit/cluster/node-layout.js";
import { nodeCtr } from "../kit/cluster/nodes.js";
import { suiteCluster } from "../kit/cluster/suite.js";
import { AgentIdentity } from "../kit/cluster/tokens.js";
import { asList, meshedDeployment, meshedPod, plainPod, proxyInbound } from "../kit/cluster/workloads.js";
import { type Background, until, withBackground } from "../kit/common.js";
import { describeAsRoot } from "../kit/root-suites.js";

const layouts = [1, 2, 3].map((index) => nodeLayout(index));
const [first, second, third] = [layouts[0]!, layouts[1]!, layouts[2]!];
const names = layouts.map((layout) => layout.name);
const evictFlags = ["--repair", "evict", "--evict-namespaces", "default"];
const hold = "meshcni.test/hold";
/** Pods the rollout scenario starts while the DaemonSet rolls: enough to meet every node mid-rollout, few enough for 2 cores. */
const rollingPods = 24;
const leg = currentLeg();
// Several nodes run the bridge primary on IPv4 alone (test/kit/cluster/nodes.ts).
const suite =
  leg.families === "ipv4" && leg.primary === "bridge"
    ? describeAsRoot
    : (name: string, body: () => void) => describe.skip(`${name} (leg ${leg.name}: several nodes run the bridge primary on IPv4)`, body);

/**
 * Three nodes, each in namespaces of its own with its own containerd, kubelet and
 * kube-proxy, one control plane, meshcni installed from its manifests as one DaemonSet
 * (test/kit/cluster/nodes.ts): what happens between nodes, each proven with real TCP.
 */
suite("meshcni on a cluster of three nodes", () => {
  const cluster = suiteCluster(
    async (cluster) => {
      // A meshed pod started on node-1 before meshcni (it tolerates the startup taint): the repair's, to move to another node.
      // The others held by a taint it does not tolerate until their agents are ready, node-1 cordoned: its replacement
      // can go only to a node where meshcni is chained.
      for (const node of [second.name, third.name]) await cluster.kubectl(["taint", "node", node, `${hold}:NoSchedule`]);
      await cluster.kubectl(["apply", "-f", "-"], asList(meshedDeployment("early", { sidecar: "native", early: true })));
      await cluster.kubectl(["rollout", "status", "deployment/early", "--timeout=90s"]);
      await cordon(cluster, [first.name]);
      await new Meshcni(cluster).deploy(evictFlags);
      for (const node of [second.name, third.name]) await cluster.kubectl(["taint", "node", node, `${hold}:NoSchedule-`]);
    },
    { nodes: 3 },
  );
  const meshcni = new Meshcni(cluster);
  const evictions = () =>
    auditEvents(agentUser()).filter((event) => event.objectRef?.subresource === "eviction" && event.responseStatus?.code === 201);

  it("--repair evict: node-1's agent evicts the pod that started there before meshcni; its replacement, on another node (node-1 cordoned), is redirected", async () => {
    await until(async () => (await runningPods(cluster, "early")).some((pod) => pod.spec.nodeName !== first.name), 120_000, 500);
    expect(evictions().map(requestNode)).toEqual([first.name]);
    await cordon(cluster, [first.name], false);
    await cluster.kubectl(["apply", "-f", "-"], asList(plainPod("client", { node: first.name })));
    await cluster.kubectl(["wait", "--for=condition=Ready", "pod/client", "--timeout=90s"]);
    const [replacement] = await runningPods(cluster, "early");
    const target = hostPort(replacement!.status.podIP!, 8080);
    expect(await cluster.connect("client", target)).toBe(`${proxyInbound} dst=${target} src=${await cluster.podIp("client")}`);
  });

  it("has each node's own agent lift its startup taint and set its MeshcniReady condition", async () => {
    // Ready, not PodsUnprotected: the early pod has gone from node-1 (above).
    const ready = { tainted: false, ready: "True", reason: "Ready" };
    for (const node of names)
      await until(async () => JSON.stringify(await meshcniState(cluster, node)) === JSON.stringify(ready), 60_000, 250);
    // Each lifted by its own node's agent: the request's token names the node its pod is on.
    const patches = auditEvents(agentUser()).filter((event) => event.verb === "patch" && event.objectRef?.resource === "nodes");
    for (const node of names) expect(patches.filter((event) => event.objectRef?.name === node).map(requestNode)).toContain(node);
  });

  it("carries meshed pods' traffic across nodes through both proxies, to pods and to a Service with endpoints on every node", async () => {
    await spreadAcrossNodes(cluster, layouts);
  }, 240_000);

  it("holds each agent's real token to its own node: another node's Node, status, pods and node-bound tokens refused", async () => {
    for (const layout of layouts) {
      const agent = await AgentIdentity.of(cluster, meshcni, layout);
      const token = ["create", "token", "meshcni-plugin", "-n", "meshcni", "--bound-object-kind", "Node", "--bound-object-name"];
      for (const other of names.filter((name) => name !== layout.name)) {
        expect(await agent.kubectl("label", "node", other, "x=y")).toMatch(/its own Node/);
        const condition = { status: { conditions: [{ type: "MeshcniReady", status: "False", reason: "Test", message: "t" }] } };
        const patched = await agent.request("PATCH", `/api/v1/nodes/${other}/status`, condition, "application/strategic-merge-patch+json");
        expect(`${patched.code} ${patched.body}`).toMatch(/^4\d\d .*its own Node/s);
        expect(await agent.kubectl("label", "pod", `app-${other}`, "meshcni.io/unprotected=true")).toMatch(/only pods on its own node/);
        // Before 1.31 the server binds no token to a Node (and kubectl will not ask it to): there is none to refuse.
        if (bindsTokensToNodes(leg)) expect(await agent.kubectl(...token, other)).toMatch(/bound only to its own Node/);
      }
      // Its own node's token is given: the refusals are about the node, not the verb.
      if (bindsTokensToNodes(leg)) expect(await agent.kubectl(...token, layout.name, "--duration", "1h")).toMatch(/^ey/);
    }
    for (const node of names) expect((await meshcniState(cluster, node))?.ready).toBe("True");
  });

  it("says in MeshcniReady and meshcni status which one node's chain is broken, the others ready", async () => {
    const portmap = onHost(third, "/opt/cni/bin/portmap");
    rmSync(portmap);
    try {
      await until(async () => (await meshcniState(cluster, third.name))?.ready === "False", 60_000, 500);
      const status = await meshcni.cli("status", "--output", "json");
      expect(status.exitCode, status.stderr).toBe(0);
      const view = JSON.parse(status.stdout) as { nodes: Array<{ node: string; ready: string; reason: string }> };
      expect(view.nodes.map(({ node, ready, reason }) => ({ node, ready, reason }))).toEqual([
        { node: first.name, ready: "True", reason: "Ready" },
        { node: second.name, ready: "True", reason: "Ready" },
        { node: third.name, ready: "False", reason: "ChainBroken" },
      ]);
    } finally {
      copyFileSync(join(cluster.bin["cni-plugins"], "portmap"), portmap);
    }
    await until(async () => (await meshcniState(cluster, third.name))?.ready === "True", 60_000, 500);
  });

  it("rolls a changed netconf and a new image out node by node while meshed pods start on every node, each with its redirect", async () => {
    for (const layout of layouts) await nodeCtr(cluster.bin, layout, "images", "import", "--all-platforms", await otherBuildArchive());
    const jsonpath = "jsonpath={.spec.template.spec.containers[0].image}";
    const image = await cluster.kubectl(["-n", "meshcni", "get", "daemonset", "meshcni", "-o", jsonpath]);
    let mostWithout = 0;
    const started: string[] = [];
    let index = 0;
    const sampleReady: Background = {
      everyMs: 200,
      round: async () => {
        // A sample the API did not answer is a sample missed.
        const ready = await nodesWithReadyAgent(cluster).catch(() => undefined);
        if (ready) mostWithout = Math.max(mostWithout, names.length - ready.size);
        return true;
      },
    };
    const startPod: Background = {
      everyMs: 1500,
      round: async () => {
        if (index >= rollingPods) return false;
        const name = `roll-${index}`;
        const pod = meshedPod(name, { sidecar: index % 2 ? "native" : "container", node: names[index % names.length]! });
        index++;
        // One the API refused (a rollout does not touch it) is one fewer to check, not a failure of the loop.
        if (
          await cluster.kubectl(["apply", "-f", "-"], asList(pod)).then(
            () => true,
            () => false,
          )
        )
          started.push(name);
        return true;
      },
    };
    await withBackground([sampleReady, startPod], async () => {
      await meshcni.deploy([...evictFlags, "--netconf", "outbound-ports-to-ignore=[9999]"]);
      for (const layout of layouts)
        expect(chainedEntry(layout, "meshcni")).toMatchObject({ linkerd: { "outbound-ports-to-ignore": [9999] } });
      for (const to of [`${imageRepository}:${otherBuild.tag}`, image]) {
        await cluster.kubectl(["-n", "meshcni", "set", "image", "daemonset/meshcni", `install=${to}`]);
        await meshcni.rolledOut();
        if (to !== image) for (const layout of layouts) expect(await agentCommit(layout.ip)).toBe(otherBuild.commit);
      }
    });
    // One node at a time (maxUnavailable 1), and the watch saw the rollouts move.
    expect(mostWithout).toBe(1);
    await cluster.kubectl(["wait", "--for=condition=Ready", ...started.map((name) => `pod/${name}`), "--timeout=120s"]);
    const targets = await Promise.all(started.map(async (name) => hostPort(await cluster.podIp(name), 8080)));
    const client = await cluster.podIp("client");
    expect(await answersFromPod(cluster, "client", targets)).toEqual(
      targets.map((target) => `${proxyInbound} dst=${target} src=${client}`),
    );
    // None evicted for want of its redirect: the early pod's is the only eviction.
    expect(evictions()).toHaveLength(1);
    await cluster.kubectl(["delete", "pod", "--wait=false", ...started]);
  }, 600_000);

  it("drains a node: its meshed pods start again on the others, redirected; uncordoned, it takes pods again", async () => {
    await drainAndRejoin(cluster, second);
  }, 420_000);

  it("registers a node added later with the startup taint, schedules no meshed pod there before its own agent lifts it, then loses it for good", async () => {
    await nodeAddedThenDeleted(cluster, meshcni, nodeLayout(4), layouts);
  }, 420_000);
});
