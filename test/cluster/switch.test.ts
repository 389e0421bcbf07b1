import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { RealCluster } from "../kit/cluster/cluster.js";
import { paths } from "../kit/cluster/layout.js";
import { currentLeg, loadsDropIns } from "../kit/cluster/leg.js";
import { installLinkerdCni, linkerdCniEntry, uninstallLinkerdCni } from "../kit/cluster/linkerd-cni.js";
import { agentSeries, auditNode, Meshcni } from "../kit/cluster/meshcni.js";
import { chainedTypes, conflistPlugins, loadedTypes, primaryConflistPath, primaryTypes } from "../kit/cluster/node.js";
import { asList, expectRunningPodsRedirected, meshedDeployment, plainPod, redirectedBy } from "../kit/cluster/workloads.js";
import { sleep, until } from "../kit/common.js";
import { describeAsRoot } from "../kit/root-suites.js";

/**
 * Switching a node from linkerd-cni to meshcni and back, with meshed pods starting all the
 * while: in the safe order (the new plugin chained before the old one leaves), each step as
 * docs/migration.md gives it. linkerd-cni is its stand-in (test/kit/cluster/linkerd-cni.ts):
 * its binary the Go linkerd-cni pattern, its entry written and stripped as its installer does.
 */
describeAsRoot("switching between linkerd-cni and meshcni on a real cluster", () => {
  const cluster = new RealCluster();
  const meshcni = new Meshcni(cluster);
  const dropIns = loadsDropIns(currentLeg());

  /**
   * Scales `app` up by one every 1.5 s until stopped: meshed pods starting throughout a switch. They
   * tolerate meshcni's startup taint, which the node registers with: linkerd-cni lifts none.
   */
  let churning: { running: boolean; done: Promise<void> } | undefined;
  const churn = (app: string) => {
    let replicas = 0;
    const state = { running: true, done: Promise.resolve() };
    state.done = (async () => {
      await cluster.kubectl(["apply", "-f", "-"], asList(meshedDeployment(app, { sidecar: "native", replicas: 0, early: true })));
      while (state.running) {
        await cluster.kubectl(["scale", `deployment/${app}`, `--replicas=${++replicas}`]);
        await sleep(1500);
      }
    })();
    churning = state;
    return async () => {
      state.running = false;
      await state.done;
      await cluster.kubectl(["rollout", "status", `deployment/${app}`, "--timeout=180s"]);
      return replicas;
    };
  };
  /** meshcni as a node migrating from linkerd-cni runs it: iptables-nft, linkerd-cni's backend, so that its pods are adopted on every leg. */
  const deployMeshcni = (edit?: (manifests: string) => string) => meshcni.deploy(["--netconf", "iptables-mode=nft"], edit);
  /** With its entry in the config (no drop-ins), meshcni puts itself last again once linkerd-cni's installer appends its own. */
  const chainIs = (types: string[]) => until(() => chainedTypes().join() === types.join(), 10_000, 50).then(() => chainedTypes());
  const repairs = async () => {
    const text = await fetch("http://127.0.0.1:9911/metrics").then((response) => response.text());
    return [...text.matchAll(/^meshcni_repairs_total\{[^}]*\} (\S+)$/gm)].reduce((sum, [, value]) => sum + Number(value), 0);
  };

  beforeAll(async () => {
    await cluster.up();
    await cluster.kubectl(["apply", "-f", "-"], asList(plainPod("client", { early: true })));
    await cluster.kubectl(["wait", "--for=condition=Ready", "pod/client", "--timeout=90s"]);
  }, 300_000);

  afterEach(async () => {
    // A failed test's churn stops before the next test, or the cluster's teardown, goes on.
    if (churning) churning.running = false;
    await churning?.done.catch(() => undefined);
  });

  afterAll(async () => {
    await cluster.down();
  }, 120_000);

  it("from linkerd-cni to meshcni: meshcni chained beside it (its entry untouched), then linkerd-cni removed; every pod started throughout redirected, none by a repair", async () => {
    await installLinkerdCni(cluster);
    await cluster.kubectl(["apply", "-f", "-"], asList(meshedDeployment("before", { sidecar: "native", replicas: 2, early: true })));
    await cluster.kubectl(["rollout", "status", "deployment/before", "--timeout=120s"]);
    expect(await expectRunningPodsRedirected(cluster, "before")).toBe(2);
    const withLinkerd = readFileSync(primaryConflistPath, "utf8");

    const stop = churn("across");
    await sleep(4000);
    await deployMeshcni();
    // Both redirect plugins in the chain: linkerd-cni's entry as its installer wrote it, meshcni's after it.
    expect(await chainIs([...primaryTypes, "linkerd-cni", "meshcni"])).toEqual([...primaryTypes, "linkerd-cni", "meshcni"]);
    if (dropIns) expect(readFileSync(primaryConflistPath, "utf8")).toBe(withLinkerd);
    expect(conflistPlugins().find((plugin) => plugin.type === "linkerd-cni")).toEqual(linkerdCniEntry);
    const repairsBefore = await repairs();
    await sleep(6000);
    uninstallLinkerdCni();
    await sleep(6000);
    const started = await stop();
    expect(chainedTypes()).toEqual([...primaryTypes, "meshcni"]);
    expect(await expectRunningPodsRedirected(cluster, "across")).toBe(started);
    expect(await expectRunningPodsRedirected(cluster, "before")).toBe(2);
    // None was left to the sweep: each meshcni recorded got its redirect at its ADD.
    expect((await redirectedBy(cluster, "across")).filter((how) => how !== "ADD")).toEqual([]);
    expect(await repairs()).toBe(repairsBefore);
    // Every meshed pod protected, or adopted (linkerd-cni's rules, exactly meshcni's plan); none unprotected.
    await until(async () => (await auditNode()) !== undefined, 30_000, 1000);
    const audited = (await auditNode())!.filter((pod) => pod.name.startsWith("across-") || pod.name.startsWith("before-"));
    console.log(`from linkerd-cni: ${started} pods started across the switch; audit: ${audited.map((pod) => pod.status).join(", ")}`);
    expect(audited.length).toBe(started + 2);
    expect(audited.filter((pod) => !["protected", "adopted"].includes(pod.status))).toEqual([]);
  }, 400_000);

  it("back to linkerd-cni: its entry chained beside meshcni, then meshcni uninstalled, leaving linkerd-cni's entry; every pod started throughout redirected", async () => {
    const stop = churn("back");
    await sleep(4000);
    await installLinkerdCni(cluster);
    expect(await chainIs([...primaryTypes, "linkerd-cni", "meshcni"])).toEqual([...primaryTypes, "linkerd-cni", "meshcni"]);
    await sleep(6000);
    await cluster.kubectl(["-n", "meshcni", "delete", "daemonset", "meshcni", "--wait"]);
    await until(() => !chainedTypes().includes("meshcni") && !existsSync(join(paths.cniBinDir, "meshcni")), 60_000, 250);
    await sleep(6000);
    const started = await stop();
    // meshcni's uninstall removed only what it wrote: linkerd-cni's entry stays, as its installer wrote it.
    expect(chainedTypes()).toEqual([...primaryTypes, "linkerd-cni"]);
    expect(conflistPlugins().find((plugin) => plugin.type === "linkerd-cni")).toEqual(linkerdCniEntry);
    console.log(`back to linkerd-cni: ${started} pods started across the switch`);
    expect(await expectRunningPodsRedirected(cluster, "back")).toBe(started);
    expect(await expectRunningPodsRedirected(cluster, "across")).toBeGreaterThan(0);
    uninstallLinkerdCni();
  }, 400_000);

  it.runIf(dropIns)(
    "an upgrade from a meshcni that chained in the conflist: its entry moves into its drop-in (the probe first); every pod started throughout redirected at its ADD",
    async () => {
      const asBefore = (manifests: string) => manifests.replace(/^( *)- --listen$/m, "$1- --chain-by\n$1- conflist\n$1- --listen");
      await deployMeshcni(asBefore);
      expect(conflistPlugins().map((plugin) => plugin.type)).toEqual([...primaryTypes, "meshcni"]);
      expect(await agentSeries("meshcni_chain_mode", { mode: "conflist" })).toBe(1);
      const stop = churn("upgrade");
      await sleep(4000);
      await deployMeshcni();
      await sleep(4000);
      const started = await stop();
      expect(conflistPlugins().map((plugin) => plugin.type)).toEqual(primaryTypes);
      expect(await loadedTypes()).toEqual([...primaryTypes, "meshcni"]);
      expect(await agentSeries("meshcni_chain_mode", { mode: "dropin" })).toBe(1);
      const said = (await meshcni.log()).map((line) => String(line.msg));
      expect(said.indexOf("the container runtime loads drop-ins: chaining meshcni by its drop-in")).toBeLessThan(
        said.indexOf("removed meshcni's entry"),
      );
      console.log(`upgrade from the conflist's entry to the drop-in: ${started} pods started throughout`);
      expect(await expectRunningPodsRedirected(cluster, "upgrade")).toBe(started);
      expect((await redirectedBy(cluster, "upgrade")).filter((how) => how !== "ADD")).toEqual([]);
    },
    300_000,
  );
});
