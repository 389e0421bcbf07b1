import { existsSync, renameSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, expect, it } from "vitest";
import { RealCluster } from "../kit/cluster/cluster.js";
import { nodeName, paths } from "../kit/cluster/layout.js";
import { expectNothingLeftOnNode, Meshcni } from "../kit/cluster/meshcni.js";
import { chainedTypes, primaryConflistPath } from "../kit/cluster/node.js";
import { expectRunningPodsRedirected, startClientAndShop } from "../kit/cluster/workloads.js";
import { sleep, until } from "../kit/common.js";
import { meshcniBinary } from "../kit/paths.js";
import { describeAsRoot } from "../kit/root-suites.js";

const installed = () => ({
  chained: chainedTypes().at(-1) === "meshcni",
  binary: existsSync(join(paths.cniBinDir, "meshcni")),
  kubeconfig: existsSync(join(paths.cniConfDir, "ZZZ-meshcni-kubeconfig")),
});

/** meshcni's own life on a real node: a rollout, its pod force-deleted, its DaemonSet deleted. */
describeAsRoot("meshcni's rollout and removal on a real cluster", () => {
  const cluster = new RealCluster();
  const meshcni = new Meshcni(cluster);

  beforeAll(async () => {
    await cluster.up();
    await meshcni.deploy();
    await startClientAndShop(cluster);
  }, 300_000);

  afterAll(async () => {
    await cluster.down();
  }, 120_000);

  it("rollout restart: every pod started while the agent was replaced runs with its redirect", async () => {
    const before = (await meshcni.agentPod()).metadata.name;
    await cluster.kubectl(["-n", "meshcni", "rollout", "restart", "daemonset/meshcni"]);
    // Pods start through the whole rollout: before the old agent stops, while none runs, after the new one is up.
    for (let replicas = 2; replicas <= 7; replicas++) {
      await cluster.kubectl(["scale", "deployment/shop", `--replicas=${replicas}`]);
      await sleep(700);
    }
    await meshcni.rolledOut();
    expect((await meshcni.agentPod()).metadata.name).not.toBe(before);
    await cluster.kubectl(["rollout", "status", "deployment/shop", "--timeout=120s"]);
    expect(await expectRunningPodsRedirected(cluster, "shop")).toBe(7);
    expect(installed()).toEqual({ chained: true, binary: true, kubeconfig: true });
  }, 240_000);

  it("agent pod force-deleted: nothing is uninstalled, and the pods started meanwhile are redirected", async () => {
    const before = (await meshcni.agentPod()).metadata.name;
    await cluster.kubectl(["-n", "meshcni", "delete", "pod", before, "--force", "--grace-period=0"]);
    await cluster.kubectl(["scale", "deployment/shop", "--replicas=9"]);
    await until(async () => (await meshcni.agentPod()).metadata.name !== before, 60_000, 250);
    expect(installed()).toEqual({ chained: true, binary: true, kubeconfig: true });
    await meshcni.rolledOut();
    await cluster.kubectl(["rollout", "status", "deployment/shop", "--timeout=120s"]);
    expect(await expectRunningPodsRedirected(cluster, "shop")).toBe(9);
  }, 240_000);

  it("portmap taken out of the bin dir: the Node's MeshcniReady is False, ChainBroken, meshcni status and ready name it; back, True", async () => {
    const portmap = join(paths.cniBinDir, "portmap");
    const aside = join(paths.dir, "portmap.aside");
    const condition = async () =>
      (
        await cluster.get<{ status: { conditions: Array<{ type: string; status: string; reason: string; message: string }> } }>(
          "node",
          nodeName,
        )
      ).status.conditions.find((held) => held.type === "MeshcniReady");
    renameSync(portmap, aside);
    try {
      await until(async () => (await condition())?.reason === "ChainBroken", 30_000, 250);
      // The agent names the paths as its container sees them, under /host.
      expect((await condition())?.message).toContain(
        `/host${primaryConflistPath} chains portmap, with no executable in /host${paths.cniBinDir}`,
      );
      const status = await execa(meshcniBinary, ["status", "--kubeconfig", paths.adminKubeconfig], { reject: false });
      expect(status.stdout).toMatch(new RegExp(`^${nodeName} +False +ChainBroken `, "m"));
      expect(status.stdout).toContain("1 not ready (1 with a CNI chain the runtime cannot run: no pod starts there)");
      // In the agent's container, as an operator runs it (no flags): the agent's own verdict, with the disk's reasons.
      const agentPod = (await meshcni.agentPod()).metadata.name;
      const ready = await execa(
        join(cluster.bin.kubernetes, "kubectl"),
        ["--kubeconfig", paths.adminKubeconfig, "-n", "meshcni", "exec", agentPod, "--", "/usr/local/bin/meshcni", "ready"],
        { reject: false },
      );
      expect(ready.exitCode).toBe(1);
      expect(ready.stdout).toContain(`not ready (ChainBroken): /host${primaryConflistPath} chains portmap`);
    } finally {
      renameSync(aside, portmap);
    }
    await until(async () => (await condition())?.status === "True", 30_000, 250);
  }, 120_000);

  it("DaemonSet deleted: uninstalled (entry, binary, kubeconfig, socket, records gone); running pods keep their redirect", async () => {
    await cluster.kubectl(["-n", "meshcni", "delete", "daemonset", "meshcni", "--wait"]);
    await until(() => !installed().chained && !installed().binary && !installed().kubeconfig, 60_000, 250);
    await expectNothingLeftOnNode(cluster);
    expect(await expectRunningPodsRedirected(cluster, "shop")).toBe(9);
  }, 120_000);
});
