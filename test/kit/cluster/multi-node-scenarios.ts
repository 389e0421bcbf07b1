import { expect } from "vitest";
import { type Background, until, withBackground } from "../common.js";
import { answersFromPod, cordon, meshcniState, runningPods } from "./across-nodes.js";
import { agentUser, auditEvents, requestNode } from "./audit.js";
import type { PodObject, RealCluster } from "./cluster.js";
import { hostPort } from "./families.js";
import type { Meshcni } from "./meshcni.js";
import type { NodeLayout } from "./node-layout.js";
import { addNode, removeNodeForGood } from "./nodes.js";
import { asList, disruptionBudget, expectRunningPodsRedirected, meshedDeployment, meshedPod } from "./workloads.js";

/**
 * The longer scenarios of the multi-node suite (test/cluster/multi-node.test.ts), each on
 * the running cluster of several nodes with meshcni deployed and the pod `client` on node-1.
 */

/**
 * A meshed pod on each node (the proxy forwarding, so each answer names every hop) and a
 * Service over them: each reaches every other through its own outbound proxy and the other's
 * inbound proxy, and a meshed client's connections to the Service reach every node's pod the same way.
 */
export async function spreadAcrossNodes(cluster: RealCluster, layouts: NodeLayout[]): Promise<void> {
  const pods = layouts.map((layout, index) =>
    meshedPod(`app-${layout.name}`, {
      sidecar: index === 0 ? "native" : "container",
      forwards: true,
      node: layout.name,
      labels: { spread: "yes" },
    }),
  );
  const service = {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: "spread", namespace: "default" },
    spec: { selector: { spread: "yes" }, ports: [{ port: 8080 }] },
  };
  const client = meshedPod("mesh-client", { sidecar: "native", forwards: true, node: layouts[0]!.name });
  await cluster.kubectl(["apply", "-f", "-"], asList(...pods, service, client));
  const names = [...layouts.map((layout) => `app-${layout.name}`), "mesh-client"];
  await cluster.kubectl(["wait", "--for=condition=Ready", ...names.map((name) => `pod/${name}`), "--timeout=120s"]);
  const ip: Record<string, string> = {};
  for (const name of names) ip[name] = await cluster.podIp(name);
  for (const layout of layouts) expect((await cluster.get<PodObject>("pod", `app-${layout.name}`)).spec.nodeName).toBe(layout.name);
  /** The answer of a connection from `from` to `dst` that reached the pod `to`: through `from`'s outbound proxy and `to`'s inbound one. */
  const through = (from: string, dst: string, to: string) => {
    const app = hostPort(ip[to]!, 8080);
    return `proxy-outbound dst=${dst} src=${ip[from]} > proxy-inbound dst=${app} src=${ip[from]} > ${to} dst=${app} src=${ip[to]}`;
  };
  for (const from of layouts)
    for (const to of layouts.filter((other) => other !== from)) {
      const target = hostPort(ip[`app-${to.name}`]!, 8080);
      expect(await cluster.connect(`app-${from.name}`, target)).toBe(through(`app-${from.name}`, target, `app-${to.name}`));
    }
  const vip = hostPort(await cluster.kubectl(["get", "service", "spread", "-o", "jsonpath={.spec.clusterIP}"]), 8080);
  const expected = layouts.map((layout) => through("mesh-client", vip, `app-${layout.name}`));
  // Once kube-proxy has the endpoints on every node, each connection reaches one of them, through both proxies.
  await until(async () => expected.includes((await answersFromPod(cluster, "mesh-client", [vip]))[0]!), 30_000, 500);
  const answers = await answersFromPod(
    cluster,
    "mesh-client",
    Array.from({ length: 36 }, () => vip),
  );
  for (const answer of answers) expect(expected).toContain(answer);
  expect(new Set(answers).size).toBe(layouts.length);
}

/**
 * `kubectl drain` of a node under a meshed Deployment spread over the nodes with a budget:
 * its pod starts again on the others, redirected; uncordoned, the node takes new pods, redirected.
 */
export async function drainAndRejoin(cluster: RealCluster, drained: NodeLayout): Promise<void> {
  const shop = meshedDeployment("shop", { sidecar: "native", replicas: 3, spread: true });
  await cluster.kubectl(["apply", "-f", "-"], asList(shop, disruptionBudget("shop", 1)));
  await cluster.kubectl(["rollout", "status", "deployment/shop", "--timeout=120s"]);
  const on = (pods: PodObject[]) => pods.filter((pod) => pod.spec.nodeName === drained.name);
  expect(on(await runningPods(cluster, "shop"))).toHaveLength(1);
  await cluster.kubectl(["drain", drained.name, "--ignore-daemonsets", "--force", "--timeout=180s"]);
  await until(
    async () => {
      const pods = await runningPods(cluster, "shop");
      return pods.length === 3 && on(pods).length === 0;
    },
    120_000,
    500,
  );
  expect(await expectRunningPodsRedirected(cluster, "shop")).toBe(3);
  await cordon(cluster, [drained.name], false);
  // The node lifecycle controller takes its unschedulable taint off after: until then the spread leaves the node out.
  const unschedulable = async () =>
    (await cluster.kubectl(["get", "node", drained.name, "-o", "jsonpath={.spec.taints}"])).includes("unschedulable");
  await until(async () => !(await unschedulable()), 30_000, 250);
  await cluster.kubectl(["scale", "deployment/shop", "--replicas=6"]);
  await cluster.kubectl(["rollout", "status", "deployment/shop", "--timeout=120s"]);
  expect(on(await runningPods(cluster, "shop")).length).toBeGreaterThan(0);
  expect(await expectRunningPodsRedirected(cluster, "shop")).toBe(6);
  await cluster.kubectl(["delete", "deployment", "shop", "--wait=false"]);
}

/**
 * A node joining the running cluster registers with the startup taint, and no meshed pod
 * waiting for it is bound there until its own agent lifts the taint; then the node goes
 * for good (powered off, its Node deleted): its pods leave the API, the DaemonSet counts the rest.
 */
export async function nodeAddedThenDeleted(
  cluster: RealCluster,
  meshcni: Meshcni,
  added: NodeLayout,
  running: NodeLayout[],
): Promise<void> {
  await cluster.kubectl(["apply", "-f", "-"], asList(meshedDeployment("late", { sidecar: "container", replicas: 2, node: added.name })));
  let sawTainted = false;
  const boundWhileTainted = new Set<string>();
  const sampleBound: Background = {
    everyMs: 250,
    round: async () => {
      // The pods first: one bound when read, on a node still tainted after, was bound while the taint stood (it is lifted once).
      // A read the API did not answer is a sample missed.
      const pods = await cluster.get<{ items: PodObject[] }>("pods", "-l", "app=late").catch(() => undefined);
      if (pods && (await meshcniState(cluster, added.name))?.tainted) {
        sawTainted = true;
        for (const pod of pods.items.filter((candidate) => candidate.spec.nodeName)) boundWhileTainted.add(pod.metadata.name);
      }
      return true;
    },
  };
  await withBackground([sampleBound], async () => {
    await addNode(cluster, added, running);
    await until(async () => (await meshcniState(cluster, added.name))?.tainted === false, 120_000, 250);
    await until(async () => (await runningPods(cluster, "late")).length === 2, 120_000, 500);
  });
  expect(sawTainted).toBe(true);
  expect([...boundWhileTainted]).toEqual([]);
  const patches = auditEvents(agentUser()).filter((event) => event.verb === "patch" && event.objectRef?.name === added.name);
  expect(patches.map(requestNode)).toContain(added.name);
  expect(await expectRunningPodsRedirected(cluster, "late")).toBe(2);

  await removeNodeForGood(added, running);
  await cluster.kubectl(["delete", "node", added.name]);
  // The pod garbage collector removes the pods of a node that is gone (after its quarantine of 40 s).
  const onAdded = async () =>
    (await cluster.get<{ items: PodObject[] }>("pods", "-A", "--field-selector", `spec.nodeName=${added.name}`)).items;
  await until(async () => (await onAdded()).length === 0, 180_000, 1000);
  await cluster.kubectl(["delete", "deployment", "late", "--wait=false"]);
  await meshcni.rolledOut();
  const status = await meshcni.cli("status", "--output", "json");
  expect(status.exitCode, status.stderr).toBe(0);
  const view = JSON.parse(status.stdout) as { nodes: Array<{ node: string; ready: string }> };
  expect(view.nodes).toEqual(running.map((layout) => expect.objectContaining({ node: layout.name, ready: "True" })));
}
