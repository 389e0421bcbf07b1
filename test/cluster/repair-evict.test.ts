import { afterAll, beforeAll, expect, it } from "vitest";
import { agentUser, auditEvents, describeRequest } from "../kit/cluster/audit.js";
import { type PodObject, RealCluster } from "../kit/cluster/cluster.js";
import { hostPort } from "../kit/cluster/families.js";
import { Meshcni } from "../kit/cluster/meshcni.js";
import {
  asList,
  disruptionBudget,
  type EventObject,
  meshedDeployment,
  plainPod,
  proxyInbound,
  releaseGate,
} from "../kit/cluster/workloads.js";
import { until } from "../kit/common.js";
import { describeAsRoot } from "../kit/root-suites.js";

/** The shop's pods are Ready only once the test says so: a replacement stays unready until it is released. */
const released = "meshcni.test/released";

/**
 * seed 001 with `--repair evict`: meshed pods that started before meshcni was chained
 * are evicted through the real Eviction API, one at a time as their PodDisruptionBudget
 * allows; their replacements start with the redirect. The replacements carry a readiness
 * gate the test holds: the budget refuses the second eviction (429) for certain, rather
 * than when the first replacement happens to be slow.
 */
describeAsRoot("meshcni --repair evict on a real cluster", () => {
  const cluster = new RealCluster();
  const meshcni = new Meshcni(cluster);
  let early: string[] = [];
  /** The shop's pods, but those being deleted. */
  const shopPods = async () =>
    (await cluster.get<{ items: PodObject[] }>("pods", "-l", "app=shop")).items.filter((pod) => !pod.metadata.deletionTimestamp);
  const evictions = () => auditEvents(agentUser()).filter((event) => event.objectRef?.subresource === "eviction");

  beforeAll(async () => {
    await cluster.up();
    await cluster.kubectl(
      ["apply", "-f", "-"],
      asList(
        plainPod("client", { early: true }),
        meshedDeployment("shop", { sidecar: "native", early: true, replicas: 2, readinessGate: released }),
      ),
    );
    await until(async () => (await shopPods()).filter((pod) => pod.status.phase === "Running").length === 2, 90_000, 500);
    for (const pod of await shopPods()) await releaseGate(cluster, pod.metadata.name, released);
    await cluster.kubectl(["rollout", "status", "deployment/shop", "--timeout=90s"]);
    await cluster.kubectl(["wait", "--for=condition=Ready", "pod/client", "--timeout=60s"]);
    // At most one of the two away at a time: the second eviction waits for the first's replacement.
    await cluster.kubectl(["apply", "-f", "-"], asList(disruptionBudget("shop", 1)));
    early = (await shopPods()).map((pod) => pod.metadata.name);
    await meshcni.deploy(["--repair", "evict", "--evict-namespaces", "default"]);
  }, 300_000);

  afterAll(async () => {
    await cluster.down();
  }, 120_000);

  it("evicts each early meshed pod through the Eviction API, the budget holding the second back; the replacements are redirected", async () => {
    expect(early).toHaveLength(2);
    const answered = () => evictions().map(describeRequest);
    // The first eviction is allowed; its replacement stays unready, so the budget refuses the second (429 naming it),
    // and the agent retries rather than forcing.
    await until(() => answered().some((line) => line.endsWith(" 201")) && answered().some((line) => line.endsWith(" 429")), 120_000, 500);
    expect(answered().filter((line) => line.endsWith(" 201"))).toHaveLength(1);
    // Released, each replacement becomes Ready: the budget frees, and the second early pod goes.
    await until(
      async () => {
        const pods = await shopPods();
        for (const pod of pods.filter((pod) => !early.includes(pod.metadata.name) && pod.status.phase === "Running"))
          await releaseGate(cluster, pod.metadata.name, released);
        return pods.length === 2 && pods.every((pod) => !early.includes(pod.metadata.name) && pod.status.phase === "Running");
      },
      180_000,
      1000,
    );
    expect(answered().filter((line) => line.endsWith(" 201"))).toHaveLength(2);
    const client = await cluster.podIp("client");
    for (const pod of await shopPods()) {
      const ip = pod.status.podIP!;
      await until(async () => (await cluster.connect("client", hostPort(ip, 8080))).startsWith(proxyInbound), 30_000, 500);
      expect(await cluster.connect("client", hostPort(ip, 8080))).toBe(`${proxyInbound} dst=${hostPort(ip, 8080)} src=${client}`);
    }
    // The second was retried when its budget freed (its replacement became ready: a change on the node), not at the
    // next full sweep: the line saying it was done names how long after that change (only a change-driven sweep does).
    const evicted = (await meshcni.log()).filter((line) => line.action === "evict" && line.result === "done");
    expect(evicted.map((line) => line.pod).sort()).toEqual(early.map((name) => `default/${name}`).sort());
    const held = evictions().find((event) => event.responseStatus?.code === 429)?.objectRef?.name;
    expect(evicted.find((line) => line.pod === `default/${held}`)).toHaveProperty("detectedMs");
    const events = (await cluster.get<{ items: EventObject[] }>("events")).items.filter((event) =>
      early.includes(event.involvedObject.name),
    );
    expect(events.filter((event) => event.reason === "MeshRedirectMissing" && event.action === "Evict")).not.toHaveLength(0);
  }, 240_000);
});
