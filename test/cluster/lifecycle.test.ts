import { existsSync, renameSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, expect, it } from "vitest";
import { RealCluster } from "../kit/cluster/cluster.js";
import { nodeName, paths } from "../kit/cluster/layout.js";
import { agentMetric, expectNothingLeftOnNode, Meshcni } from "../kit/cluster/meshcni.js";
import { recordedBackends, recordsIn, switchIptablesMode } from "../kit/cluster/netconf.js";
import { chainedPlugins, chainedTypes, primaryConflistPath } from "../kit/cluster/node.js";
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

  it("kubelet's copy of the netconf older than the ConfigMap: the agent runs with the API's, says so, and moves its pods' redirects", async () => {
    const daemonSet = ["-n", "meshcni", "patch", "daemonset", "meshcni", "--type=json", "-p"];
    const envAt = "/spec/template/spec/containers/0/env";
    const env = await meshcni.containerField<Array<{ name: string }>>("env");
    const index = env.findIndex((variable) => variable.name === "CNI_NETWORK_CONFIG");
    const { to, before } = await switchIptablesMode(cluster);
    // What kubelet hands a new pod while its cache of the ConfigMap lags (its watch down after an API server restart).
    const stale = [{ op: "replace", path: `${envAt}/${index}`, value: { name: "CNI_NETWORK_CONFIG", value: before } }];
    await cluster.kubectl([...daemonSet, JSON.stringify(stale)]);
    try {
      await meshcni.rolledOut();
      await until(() => recordsIn(to), 120_000, 500).catch(() => {
        throw new Error(`records not moved to ${to}: ${recordedBackends().join(", ")}`);
      });
      expect(recordedBackends().length).toBeGreaterThan(0);
      expect((await meshcni.log()).find((line) => /kubelet's cache lagged/.test(String(line.msg)))).toMatchObject({
        level: "warn",
        configMap: "meshcni/meshcni-config",
        differs: ["linkerd.iptables-mode"],
      });
      const entry = chainedPlugins().find((plugin) => plugin.type === "meshcni") as { linkerd?: Record<string, unknown> } | undefined;
      expect(entry?.linkerd?.["iptables-mode"]).toBe(to);
      expect(await agentMetric("meshcni_netconf_verified")).toBe("1");
      expect(await expectRunningPodsRedirected(cluster, "shop")).toBe(9);
    } finally {
      // Back as it was: the ConfigMap's netconf, from the ConfigMap again.
      const patch = JSON.stringify({ data: { cni_network_config: before } });
      await cluster.kubectl(["-n", "meshcni", "patch", "configmap", "meshcni-config", "--type=merge", "-p", patch]);
      const fromConfigMap = {
        name: "CNI_NETWORK_CONFIG",
        valueFrom: { configMapKeyRef: { name: "meshcni-config", key: "cni_network_config" } },
      };
      await cluster.kubectl([...daemonSet, JSON.stringify([{ op: "replace", path: `${envAt}/${index}`, value: fromConfigMap }])]);
      await meshcni.rolledOut();
    }
  }, 300_000);

  it("DaemonSet deleted: uninstalled (entry, binary, kubeconfig, socket, records gone); running pods keep their redirect", async () => {
    await cluster.kubectl(["-n", "meshcni", "delete", "daemonset", "meshcni", "--wait"]);
    await until(() => !installed().chained && !installed().binary && !installed().kubeconfig, 60_000, 250);
    await expectNothingLeftOnNode(cluster);
    expect(await expectRunningPodsRedirected(cluster, "shop")).toBe(9);
  }, 120_000);
});
