import { describe, expect, it } from "vitest";
import { Meshcni, sandboxFailures, stopAgentKeepingDaemonSet, withPluginTokenSeconds } from "../kit/cluster/meshcni.js";
import { chainedTypes } from "../kit/cluster/node.js";
import { suiteCluster } from "../kit/cluster/suite.js";
import { pluginTokenClaims } from "../kit/cluster/tokens.js";
import { expectRunningPodsRedirected, startClientAndShop } from "../kit/cluster/workloads.js";
import { sleep, until } from "../kit/common.js";
import { describeAsRoot } from "../kit/root-suites.js";

/** The shortest life the API server grants a token (TokenRequest refuses less than 10 minutes). */
const tokenSeconds = 600;

/**
 * Its wait (the token's 10 minutes) is past what CI's run can spend: it runs in each leg of
 * `npm run test:matrix`, which sets MESHCNI_LEG (by hand: MESHCNI_LEG=default).
 */
const inMatrix = process.env.MESHCNI_LEG !== undefined;

/**
 * The plugin's token outliving its agent: the DaemonSet rolled out to an image that cannot
 * start (the old agent stopped, keeping everything; no new one) for longer than the token
 * lives. Pods started then cannot be looked up: they fail closed, saying the token expired
 * and who renews it, and start redirected once the agent is back.
 */
(inMatrix ? describeAsRoot : describe.skip)("the plugin's token expired while no agent runs, on a real cluster", () => {
  const cluster = suiteCluster(async (up) => {
    await new Meshcni(up).deploy([], withPluginTokenSeconds(tokenSeconds));
    await startClientAndShop(up);
  });
  const meshcni = new Meshcni(cluster);

  it("fails closed past the token's expiry, naming it, and starts every pod redirected once the agent is back", async () => {
    const expiresAt = (pluginTokenClaims().exp ?? 0) * 1000;
    expect(expiresAt - Date.now()).toBeLessThanOrEqual(tokenSeconds * 1000);
    await stopAgentKeepingDaemonSet(cluster);
    expect(chainedTypes().at(-1)).toBe("meshcni");
    // Past its exp and the minute of leeway the API server gives a token's times.
    await sleep(Math.max(0, expiresAt - Date.now()) + 65_000);
    await cluster.kubectl(["scale", "deployment/shop", "--replicas=2"]);
    const failures = () => sandboxFailures(cluster);
    await until(async () => (await failures()).includes("token expired"), 90_000, 500).catch(async (error: Error) => {
      const pods = await cluster.kubectl(["get", "pods", "-A", "-o", "wide"]);
      throw new Error(`${error.message}; sandbox failures: ${(await failures()).slice(-2000)}\n${pods}`);
    });
    expect(await failures()).toMatch(
      /plugin type="meshcni".*401 Unauthorized: the kubeconfig's token expired at \S+ \(\d+ s ago\): meshcni's agent renews it while it runs on this node; is it running\?/,
    );
    expect(await expectRunningPodsRedirected(cluster, "shop")).toBe(1);
    // The agent back: it mints the plugin a token, and the waiting pod starts redirected.
    await cluster.kubectl(["-n", "meshcni", "rollout", "undo", "daemonset/meshcni"]);
    await meshcni.rolledOut();
    await cluster.kubectl(["rollout", "status", "deployment/shop", "--timeout=180s"]);
    expect(await expectRunningPodsRedirected(cluster, "shop")).toBe(2);
    expect((pluginTokenClaims().exp ?? 0) * 1000).toBeGreaterThan(Date.now());
  }, 1_200_000);
});
