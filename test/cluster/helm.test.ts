import { existsSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { chartDir, helm, valuesFile } from "../kit/chart/helm.js";
import { nodeName, paths, startupTaint } from "../kit/cluster/layout.js";
import { expectNothingLeftOnNode, Meshcni } from "../kit/cluster/meshcni.js";
import { chainedPlugins, chainedTypes, primaryTypes } from "../kit/cluster/node.js";
import { suiteCluster } from "../kit/cluster/suite.js";
import { expectRunningPodsRedirected, startClientAndShop } from "../kit/cluster/workloads.js";
import { sleep, until } from "../kit/common.js";
import { linkerdCniValues } from "../kit/linkerd/chart.js";
import { describeAsRoot } from "../kit/root-suites.js";

/** An operator's linkerd2-cni values file (that chart's whole values.yaml), with this node's dirs, CRI socket and netns dir. */
const values = {
  ...linkerdCniValues,
  destCNINetDir: paths.cniConfDir,
  destCNIBinDir: paths.cniBinDir,
  netnsDir: paths.netnsDir,
  criSocket: paths.containerdSocket,
};

/** meshcni's entry in the primary's chain now (undefined: not chained), read as the runtime reads it: the conflist, then its drop-ins. */
const meshcniEntry = () =>
  chainedPlugins().find((plugin) => plugin.type === "meshcni") as { type: string; linkerd?: Record<string, unknown> } | undefined;

/**
 * meshcni installed, upgraded and uninstalled with Helm (built from the Go module proxy) on
 * the real cluster, from a values file written for linkerd2-cni: the redirect proven with
 * real TCP, the conflist watched through the upgrade's rollout, the node and the API server
 * read after the uninstall.
 */
describeAsRoot("meshcni's chart on a real cluster", () => {
  const cluster = suiteCluster();
  const meshcni = new Meshcni(cluster);
  const release = ["meshcni", chartDir, "--namespace", "meshcni"];
  const kubeconfig = paths.adminKubeconfig;

  it("helm install with linkerd2-cni's values: chained last, the node ready, a meshed pod redirected; NOTES name Linkerd's image", async () => {
    const install = await helm(
      ["install", ...release, "--create-namespace", "--values", valuesFile(values), "--wait", "--timeout", "3m"],
      kubeconfig,
    );
    expect(install.exitCode, install.stderr).toBe(0);
    expect(install.stdout).toContain("WARNING: image.name cr.l5d.io/linkerd/cni-plugin is Linkerd's plugin");
    expect(chainedTypes()).toEqual([...primaryTypes, "meshcni"]);
    expect(meshcniEntry()?.linkerd).toMatchObject({ "inbound-ports-to-ignore": ["4191", "4190"], "iptables-mode": "nft" });
    await until(
      async () => {
        const node = await cluster.get<{ spec: { taints?: Array<{ key: string }> } }>("node", nodeName);
        return !(node.spec.taints ?? []).some((taint) => taint.key === startupTaint);
      },
      30_000,
      250,
    );
    await startClientAndShop(cluster);
    expect(await expectRunningPodsRedirected(cluster, "shop")).toBe(1);
    const status = await meshcni.cli("status");
    expect(status.stdout).toMatch(new RegExp(`^${nodeName}\\s+True\\s+Ready\\s`, "m"));
    // A clean install says nothing is wrong, though the policy it applies with the DaemonSet is enforced seconds later.
    expect((await meshcni.log()).filter((line) => line.level === "error" || line.level === "warn")).toEqual([]);
  }, 300_000);

  it("helm upgrade with a changed value: it reaches the node's conflist, meshcni stays chained throughout, pods started meanwhile are redirected", async () => {
    const before = (await meshcni.agentPod()).metadata.name;
    let reads = 0;
    const unchained: string[] = [];
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        // The runtime reads the file at each pod's ADD: every read must find meshcni's entry.
        try {
          if (!meshcniEntry()) unchained.push(new Date().toISOString());
        } catch (error) {
          unchained.push(`${new Date().toISOString()} unreadable: ${String(error)}`);
        }
        reads++;
        await sleep(20);
      }
    })();
    const upgrade = helm(
      ["upgrade", ...release, "--values", valuesFile({ ...values, ignoreInboundPorts: "9999" }), "--wait", "--timeout", "3m"],
      kubeconfig,
    );
    for (let replicas = 2; replicas <= 4; replicas++) {
      await cluster.kubectl(["scale", "deployment/shop", `--replicas=${replicas}`]);
      await sleep(1500);
    }
    const upgraded = await upgrade;
    expect(upgraded.exitCode, upgraded.stderr).toBe(0);
    await until(() => JSON.stringify(meshcniEntry()?.linkerd?.["inbound-ports-to-ignore"]) === '["4191","4190","9999"]', 60_000, 100);
    watching = false;
    await watcher;
    expect(unchained).toEqual([]);
    expect(reads).toBeGreaterThan(100);
    // The checksum of the netconf rolled the agent out: a new pod read the new ConfigMap.
    expect((await meshcni.agentPod()).metadata.name).not.toBe(before);
    await cluster.kubectl(["rollout", "status", "deployment/shop", "--timeout=120s"]);
    expect(await expectRunningPodsRedirected(cluster, "shop")).toBe(4);
  }, 300_000);

  it("helm uninstall: nothing of meshcni is left on the node or in the API; running pods keep their redirect", async () => {
    const uninstall = await helm(["uninstall", "meshcni", "--namespace", "meshcni", "--wait", "--timeout", "3m"], kubeconfig);
    expect(uninstall.exitCode, uninstall.stderr).toBe(0);
    await until(() => meshcniEntry() === undefined && !existsSync(join(paths.cniBinDir, "meshcni")), 60_000, 250);
    await expectNothingLeftOnNode(cluster);
    // Every object the chart made is gone, cluster-wide ones included.
    const left = await cluster.kubectl([
      "get",
      "clusterroles,clusterrolebindings,validatingadmissionpolicies,validatingadmissionpolicybindings,daemonsets,configmaps,serviceaccounts,roles,rolebindings",
      "--all-namespaces",
      "-l",
      "app.kubernetes.io/name=meshcni",
      "-o",
      "name",
    ]);
    expect(left.trim()).toBe("");
    expect((await helm(["list", "--all-namespaces", "--short"], kubeconfig)).stdout.trim()).toBe("");
    expect(await expectRunningPodsRedirected(cluster, "shop")).toBe(4);
  }, 300_000);

  it("helm install in linkerd-cni's place (release and namespace linkerd-cni, linkerd2-cni's values): every object `linkerd check` gets is there and its DaemonSet ready; pods redirected; uninstalled clean", async () => {
    const asLinkerd = ["linkerd-cni", chartDir, "--namespace", "linkerd-cni"];
    const install = await helm(
      ["install", ...asLinkerd, "--create-namespace", "--values", valuesFile(values), "--wait", "--timeout", "3m"],
      kubeconfig,
    );
    expect(install.exitCode, install.stderr).toBe(0);
    // linkerd2 pkg/healthcheck, category linkerd-cni-plugin: each a GET by name in --cni-namespace (linkerd-cni), all fatal.
    for (const [kind, name] of [
      ["configmap", "linkerd-cni-config"],
      ["clusterrole", "linkerd-cni"],
      ["clusterrolebinding", "linkerd-cni"],
      ["serviceaccount", "linkerd-cni"],
    ] as const) {
      const found = await cluster.get<{ metadata: { name: string; labels: Record<string, string> } }>("-n", "linkerd-cni", kind, name);
      expect(found.metadata.labels["linkerd.io/cni-resource"], `${kind}/${name}`).toBe("true");
    }
    // "cni plugin pod is running on all nodes": the DaemonSet linkerd-cni's numberReady equals its desiredNumberScheduled.
    const daemonSet = await cluster.get<{ status: { desiredNumberScheduled: number; numberReady: number } }>(
      "-n",
      "linkerd-cni",
      "daemonset",
      "linkerd-cni",
    );
    expect(daemonSet.status.numberReady).toBe(daemonSet.status.desiredNumberScheduled);
    expect(daemonSet.status.numberReady).toBeGreaterThan(0);
    // Its entry is linkerd-cni's, by its binary's name; a pod started now is redirected.
    expect(chainedTypes()).toEqual([...primaryTypes, "linkerd-cni"]);
    expect(existsSync(join(paths.cniBinDir, "linkerd-cni"))).toBe(true);
    await cluster.kubectl(["scale", "deployment/shop", "--replicas=5"]);
    await cluster.kubectl(["rollout", "status", "deployment/shop", "--timeout=120s"]);
    expect(await expectRunningPodsRedirected(cluster, "shop")).toBe(5);
    const uninstall = await helm(["uninstall", "linkerd-cni", "--namespace", "linkerd-cni", "--wait", "--timeout", "3m"], kubeconfig);
    expect(uninstall.exitCode, uninstall.stderr).toBe(0);
    await until(() => !chainedTypes().includes("linkerd-cni") && !existsSync(join(paths.cniBinDir, "linkerd-cni")), 60_000, 250);
    await expectNothingLeftOnNode(cluster);
  }, 300_000);
});
