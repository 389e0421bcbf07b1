import { join } from "node:path";
import { execa } from "execa";
import { afterAll, expect, it } from "vitest";
import { auditEvents, describeRequest } from "../kit/cluster/audit.js";
import type { RealCluster } from "../kit/cluster/cluster.js";
import { paths } from "../kit/cluster/layout.js";
import { agentAnswersReady, Meshcni } from "../kit/cluster/meshcni.js";
import { chainedTypes } from "../kit/cluster/node.js";
import { rotateSigningKey } from "../kit/cluster/signing-key.js";
import { suiteCluster } from "../kit/cluster/suite.js";
import { jwtHeader, pluginToken } from "../kit/cluster/tokens.js";
import { expectRunningPodsRedirected, startClientAndShop } from "../kit/cluster/workloads.js";
import { sleep, until } from "../kit/common.js";
import { describeAsRoot } from "../kit/root-suites.js";

/** How many shop pods are Ready. */
async function readyShopPods(cluster: RealCluster): Promise<number> {
  const pods = await cluster.get<{ items: Array<{ status: { conditions?: Array<{ type: string; status: string }> } }> }>(
    "pods",
    "-l",
    "app=shop",
  );
  return pods.items.filter((pod) => pod.status.conditions?.some((condition) => condition.type === "Ready" && condition.status === "True"))
    .length;
}

/**
 * The ServiceAccount signing key rotated under meshcni (linkerd/linkerd2#12573, #13780,
 * #14643: linkerd-cni's token refused after a rotation, pods failing on every node until
 * its pods were restarted by hand).
 */
describeAsRoot("the ServiceAccount signing key rotated on a real cluster", () => {
  const chainWatch: { missing: number; stop?: () => void } = { missing: 0 };
  const cluster = suiteCluster(async (up) => {
    await new Meshcni(up).deploy();
    await startClientAndShop(up, 2);
    // meshcni's entry must never leave the chain: a stop that took a refused token for an uninstall would take it out.
    const timer = setInterval(() => {
      if (!chainedTypes().includes("meshcni")) chainWatch.missing++;
    }, 50);
    chainWatch.stop = () => clearInterval(timer);
  });
  const meshcni = new Meshcni(cluster);
  afterAll(() => chainWatch.stop?.());

  it("with the old key kept: nothing refused, the agent ready throughout, pods started meanwhile redirected", async () => {
    const since = new Date().toISOString();
    let notReady = 0;
    const probing = setInterval(async () => {
      if (!(await agentAnswersReady())) notReady++;
    }, 250);
    try {
      await rotateSigningKey(cluster, "kept");
      await cluster.kubectl(["scale", "deployment/shop", "--replicas=4"]);
      await cluster.kubectl(["rollout", "status", "deployment/shop", "--timeout=90s"]);
      await sleep(5000);
    } finally {
      clearInterval(probing);
    }
    expect(notReady).toBe(0);
    const refused = auditEvents().filter((event) => event.requestReceivedTimestamp >= since && event.responseStatus?.code === 401);
    expect(refused.map(describeRequest)).toEqual([]);
    expect(await expectRunningPodsRedirected(cluster, "shop")).toBe(4);
    expect(chainWatch.missing).toBe(0);
  }, 240_000);

  it("with the old key dropped: not ready (Unauthorized), no pod starts unmeshed, meshcni stays chained; a rollout restart recovers it", async () => {
    const before = jwtHeader(pluginToken()).kid;
    // Every token out is refused now: the agent's (projected by kubelet) and the plugin's (minted by the agent).
    await rotateSigningKey(cluster, "dropped");
    await until(async () => !(await agentAnswersReady()), 60_000, 250);
    const readyz = await fetch("http://127.0.0.1:9911/readyz").then((response) => response.text());
    expect(readyz).toMatch(/^not ready: Unauthorized/);
    // A pod started now fails closed, with the API's word in its event, and is retried: never started unmeshed.
    await cluster.kubectl(["scale", "deployment/shop", "--replicas=5"]);
    const sandboxFailures = () =>
      cluster.kubectl(["get", "events", "--field-selector", "reason=FailedCreatePodSandBox", "-o", "jsonpath={.items[*].message}"]);
    await until(async () => (await sandboxFailures()).includes("401 Unauthorized"), 60_000, 500);
    expect(await sandboxFailures()).toMatch(/plugin type="meshcni".*reading pod default\/shop-.*401 Unauthorized/);
    expect(await readyShopPods(cluster)).toBe(4);
    // The remedy when the old key is gone: meshcni's pods restarted (new pods, new tokens). The old agent keeps everything.
    const oldAgent = (await meshcni.agentPod()).metadata.name;
    const kubectl = join(cluster.bin.kubernetes, "kubectl");
    const oldLog = execa(kubectl, ["--kubeconfig", paths.adminKubeconfig, "-n", "meshcni", "logs", "-f", oldAgent], { reject: false });
    const recovering = performance.now();
    await cluster.kubectl(["-n", "meshcni", "rollout", "restart", "daemonset/meshcni"]);
    await meshcni.rolledOut();
    await cluster.kubectl(["rollout", "status", "deployment/shop", "--timeout=180s"]);
    console.log(`every shop pod Ready ${((performance.now() - recovering) / 1000).toFixed(1)} s after meshcni's rollout restart`);
    expect(await expectRunningPodsRedirected(cluster, "shop")).toBe(5);
    expect(jwtHeader(pluginToken()).kid).not.toBe(before);
    const stop = (await oldLog).stdout
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as { msg: string; why?: string })
      .find((line) => line.msg.startsWith("stopping;") || line.msg === "uninstalled");
    expect(stop).toMatchObject({
      msg: "stopping; meshcni stays installed and chained",
      why: expect.stringContaining("signing key rotated"),
    });
    expect(chainWatch.missing).toBe(0);
  }, 420_000);
});
