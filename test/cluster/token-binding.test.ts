import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agentUser, auditEvents, describeRequest } from "../kit/cluster/audit.js";
import { RealCluster } from "../kit/cluster/cluster.js";
import { hostPort } from "../kit/cluster/families.js";
import { nodeName, startupTaint } from "../kit/cluster/layout.js";
import { bindsTokensToNodes, currentLeg, minorOf } from "../kit/cluster/leg.js";
import { Meshcni } from "../kit/cluster/meshcni.js";
import { pluginTokenClaims } from "../kit/cluster/tokens.js";
import { proxyInbound, startClientAndShop } from "../kit/cluster/workloads.js";
import { until } from "../kit/common.js";
import { describeAsRoot } from "../kit/root-suites.js";

/**
 * A cluster as it was before 1.31: the API server's ServiceAccountTokenNodeBinding gate off
 * (its default before 1.31). It answers a TokenRequest bound to a Node with
 * 400 BadRequest. The agent must still mint the plugin's token (unbound), get ready and
 * lift the startup taint, or no pod is ever scheduled on the node.
 */
const gateOff = ["--feature-gates=ServiceAccountTokenNodeBinding=false"];
/**
 * How this leg's release is made one that cannot bind: before 1.31 it is one (the gate off by
 * default; set off all the same); 1.31 to 1.35 emulate 1.32 with the gate off; a later release
 * cannot emulate back past the gate's GA (1.33, locked on): the oldest leg proves it there.
 */
const leg = currentLeg();
const unbindable = !bindsTokensToNodes(leg)
  ? { apiserverArgs: gateOff }
  : minorOf(leg.kubernetes) - 3 <= 32
    ? { emulatedVersion: "1.32", apiserverArgs: gateOff }
    : undefined;

(unbindable ? describeAsRoot : describe.skip)("meshcni where the API server cannot bind tokens to Nodes", () => {
  const cluster = new RealCluster(unbindable);
  const meshcni = new Meshcni(cluster);

  beforeAll(async () => {
    await cluster.up();
    await meshcni.deploy();
  }, 300_000);

  afterAll(async () => {
    await cluster.down();
  }, 120_000);

  it("falls back to an unbound plugin token on the server's 400, once, gets ready and lifts the taint", async () => {
    const mints = auditEvents(agentUser()).filter((event) => event.objectRef?.subresource === "token");
    expect(mints.map(describeRequest).slice(0, 2)).toEqual(["create serviceaccounts/token 400", "create serviceaccounts/token 201"]);
    const claims = pluginTokenClaims();
    expect(claims["kubernetes.io"]).not.toHaveProperty("node");
    expect(claims.sub).toBe("system:serviceaccount:meshcni:meshcni-plugin");
    await until(
      async () =>
        !((await cluster.get<{ spec: { taints?: Array<{ key: string }> } }>("node", nodeName)).spec.taints ?? []).some(
          (taint) => taint.key === startupTaint,
        ),
      30_000,
      250,
    );
  });

  it("starts a meshed pod with its redirect (scheduled only once the taint is lifted)", async () => {
    await startClientAndShop(cluster);
    const ip = await cluster.podIpOf("app=shop");
    expect(await cluster.connect("client", hostPort(ip, 8080))).toBe(
      `${proxyInbound} dst=${hostPort(ip, 8080)} src=${await cluster.podIp("client")}`,
    );
  });
});
