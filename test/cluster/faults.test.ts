import { afterAll, beforeAll, expect, it } from "vitest";
import { type AuditEvent, agentUser, auditEvents, describeRequest } from "../kit/cluster/audit.js";
import { type PodObject, RealCluster } from "../kit/cluster/cluster.js";
import { compactEtcd } from "../kit/cluster/control-plane.js";
import { hostPort } from "../kit/cluster/families.js";
import { nodeName, startupTaint } from "../kit/cluster/layout.js";
import { Meshcni } from "../kit/cluster/meshcni.js";
import { asList, meshedDeployment, plainPod, proxyInbound } from "../kit/cluster/workloads.js";
import { sleep, until } from "../kit/common.js";
import { describeAsRoot } from "../kit/root-suites.js";

const skipInbound = "config.linkerd.io/skip-inbound-ports";

/** The agent's requests from `since` on (ISO time). */
const agentRequestsSince = (since: string): AuditEvent[] =>
  auditEvents(agentUser()).filter((event) => event.requestReceivedTimestamp >= since);

/**
 * The control plane and the node failing for real under a running agent: the API server
 * killed (with etcd compacted meanwhile, so every watch resumes into 410), the Node deleted
 * and registered again, kubelet and containerd restarted with pods running. Counted by the
 * API server's own audit log.
 */
describeAsRoot("meshcni through real control-plane and node failures", () => {
  const cluster = new RealCluster();
  const meshcni = new Meshcni(cluster);
  /** The shop's first pod, started while its namespace skipped 9090: its rules keep skipping it. */
  let first = "";

  beforeAll(async () => {
    await cluster.up();
    await meshcni.deploy();
    await cluster.kubectl(["create", "namespace", "shop"]);
    await cluster.kubectl(["annotate", "namespace", "shop", `${skipInbound}=9090`]);
    await cluster.kubectl(
      ["apply", "-f", "-"],
      asList(plainPod("client"), meshedDeployment("shop", { sidecar: "native", namespace: "shop" })),
    );
    await cluster.kubectl(["-n", "shop", "rollout", "status", "deployment/shop", "--timeout=90s"]);
    first = (await cluster.get<{ items: PodObject[] }>("pods", "-n", "shop")).items[0]!.metadata.name;
  }, 300_000);

  afterAll(async () => {
    await cluster.down();
  }, 120_000);

  const shopPods = async () =>
    (await cluster.get<{ items: PodObject[] }>("pods", "-n", "shop")).items.filter((pod) => !pod.metadata.deletionTimestamp);
  /** What each shop pod's port 9090 answers the client: the proxy, or (skipped) the app. */
  const port9090 = async () => {
    const answers: Record<string, string> = {};
    for (const pod of await shopPods())
      answers[pod.metadata.name] = (await cluster.connect("client", hostPort(pod.status.podIP!, 9090))).split(" ")[0]!;
    return answers;
  };
  /** Every shop pod redirected, each as its namespace was when it started. */
  const expected9090 = async () =>
    Object.fromEntries((await shopPods()).map((pod) => [pod.metadata.name, pod.metadata.name === first ? "shop-9090" : proxyInbound]));
  const scaleShop = async (replicas: number) => {
    await cluster.kubectl(["-n", "shop", "scale", "deployment/shop", `--replicas=${replicas}`]);
    await cluster.kubectl(["-n", "shop", "rollout", "status", "deployment/shop", "--timeout=120s"]);
  };

  it("kube-apiserver killed for 4 s, etcd compacted meanwhile: a pod started after recovery follows the namespace as changed after it; no request storm", async () => {
    const killedAt = new Date().toISOString();
    await cluster.stop("kube-apiserver", "SIGKILL");
    const revision = await compactEtcd();
    await sleep(4000);
    cluster.startAgain("kube-apiserver");
    await cluster.waitApiserver();
    const recoveredAt = Date.now();
    await cluster.kubectl(["annotate", "--overwrite", "namespace", "shop", `${skipInbound}=9091`]);
    await scaleShop(2);
    // The old pod keeps the rules it started with (9090 skipped); the new one follows the annotation as it is now.
    expect(Object.keys(await port9090())).toHaveLength(2);
    expect(await port9090()).toEqual(await expected9090());
    await sleep(Math.max(0, recoveredAt + 30_000 - Date.now()));
    const requests = agentRequestsSince(killedAt);
    // Every cache relisted after the compaction (410 for every resume), and not in a loop; no namespace is listed or
    // watched (the new pod's was read by name as it came to the node).
    const lists = requests.filter((event) => event.verb === "list").map(describeRequest);
    for (const resource of ["pods", "nodes"])
      expect(lists.filter((line) => line.startsWith(`list ${resource} `)).length).toBeGreaterThan(0);
    expect(requests.filter((event) => event.objectRef?.resource === "namespaces" && event.verb !== "get")).toEqual([]);
    expect(requests.length, requests.map(describeRequest).join("\n")).toBeLessThan(40);
    console.log(
      `etcd compacted at revision ${revision}; the agent's requests from the kill to 30 s after recovery:\n${requests.map((e) => `${e.requestReceivedTimestamp.slice(11, 23)} ${describeRequest(e)}`).join("\n")}`,
    );
  }, 180_000);

  it("kubelet restarted with pods running: they keep their redirect, the next pod is redirected", async () => {
    await cluster.restart("kubelet");
    await cluster.waitNodeReady();
    await scaleShop(3);
    expect(Object.keys(await port9090())).toHaveLength(3);
    expect(await port9090()).toEqual(await expected9090());
  }, 180_000);

  it("containerd restarted with pods running: they keep their redirect, the next pod is redirected; the agent, whose mount held the old socket, is restarted by its liveness probe", async () => {
    const restarts = async () => (await meshcni.agentPod()).status.containerStatuses?.[0]?.restartCount ?? 0;
    const before = await restarts();
    const restartedAt = new Date().toISOString();
    await cluster.restart("containerd");
    await cluster.waitNodeReady();
    await scaleShop(4);
    expect(Object.keys(await port9090())).toHaveLength(4);
    expect(await port9090()).toEqual(await expected9090());
    // The DaemonSet mounts the runtime's socket alone: the new one reaches the agent in a new container.
    await until(async () => (await restarts()) > before, 150_000, 2000);
    const said = (await meshcni.log(true))
      .filter((line) => String(line.time) >= restartedAt && line.level === "error")
      .map((line) => String(line.msg));
    expect(said).toEqual([expect.stringMatching(/^the container runtime's socket \/host\/.*containerd\.sock has refused connections/)]);
    await meshcni.rolledOut();
    expect((await meshcni.log()).filter((line) => line.level === "error")).toEqual([]);
  }, 300_000);

  it("the Node deleted and registered again by a kubelet restart: the startup taint is lifted again and MeshcniReady written again", async () => {
    await cluster.stop("kubelet");
    await cluster.kubectl(["delete", "node", nodeName, "--wait"]);
    cluster.startAgain("kubelet");
    const tainted = async () =>
      ((await cluster.get<{ spec: { taints?: Array<{ key: string }> } }>("node", nodeName)).spec.taints ?? []).some(
        (t) => t.key === startupTaint,
      );
    await until(
      () =>
        cluster.get("node", nodeName).then(
          () => true,
          () => false,
        ),
      60_000,
      250,
    );
    await until(async () => !(await tainted()), 90_000, 500);
    await until(
      async () =>
        (await cluster.get<{ status: { conditions?: Array<{ type: string; status: string }> } }>("node", nodeName)).status.conditions?.some(
          (condition) => condition.type === "MeshcniReady" && condition.status === "True",
        ) ?? false,
      60_000,
      500,
    );
    // Every pod is there and redirected (any the node's deletion took with it came back through its Deployment).
    await cluster.kubectl(["apply", "-f", "-"], asList(plainPod("client")));
    await cluster.kubectl(["wait", "--for=condition=Ready", "pod/client", "--timeout=90s"]);
    await cluster.kubectl(["-n", "shop", "rollout", "status", "deployment/shop", "--timeout=120s"]);
    expect(Object.keys(await port9090())).toHaveLength(4);
    expect(await port9090()).toEqual(await expected9090());
  }, 240_000);
});
