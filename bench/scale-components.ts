// The per-node components `npm run bench scale` runs for its simulated nodes, each a host
// process with that node's identity: meshcni's agent (a host root of its own holding the
// node's CNI dirs, no runtime, a token bound to its DaemonSet pod there, as kubelet would
// project it) or kube-proxy (nftables mode, in a netns of its own so its rules touch nothing).
import { linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import type { RealCluster } from "../test/kit/cluster/cluster.js";
import { apiserverPort, nodeIp, paths } from "../test/kit/cluster/layout.js";
import { primaryConflist } from "../test/kit/cluster/node.js";
import { identities, kubeconfigOf } from "../test/kit/cluster/pki.js";
import { recordedDaemons, startDaemon, stopDaemon } from "../test/kit/cluster/processes.js";
import { primaryPlugins } from "../test/kit/cluster/teardown.js";
import { until } from "../test/kit/common.js";
import { meshcniBinary } from "../test/kit/paths.js";
import { scaleDir, simulatedName } from "./scale-nodes.js";
import type { Component } from "./scale-report.js";

const daemonPrefix: Record<Component, string> = { meshcni: "scale-agent@", "kube-proxy": "scale-proxy@" };
const proxyNetns = (node: string) => `msc-${node}`;
/**
 * Run at SCHED_IDLE: on this one host a hundred components take the CPU the API server needs
 * (100 kube-proxies syncing nftables left it 0% under churn), and what is measured is what
 * they cost the API server, which on real nodes they would not starve. chrt execs the command.
 */
const idle = (command: string, args: string[]) => ({ command: "chrt", args: ["--idle", "0", command, ...args] });

/** meshcni's DaemonSet pod the controller made for each simulated node: whose identity its agent takes. */
async function daemonSetPods(cluster: RealCluster, count: number): Promise<Map<string, { name: string; uid: string }>> {
  const pods = new Map<string, { name: string; uid: string }>();
  await until(
    async () => {
      const { items } = await cluster.get<{ items: Array<{ metadata: { name: string; uid: string }; spec: { nodeName?: string } }> }>(
        "pods",
        "-n",
        "meshcni",
      );
      for (const pod of items) if (pod.spec.nodeName?.startsWith("sim-")) pods.set(pod.spec.nodeName, pod.metadata);
      return pods.size >= count;
    },
    120_000,
    1000,
  );
  return pods;
}

/** meshcni's agent for simulated node `index`: its host root made, its token minted, then started. */
async function startAgent(cluster: RealCluster, index: number, pod: { name: string; uid: string }): Promise<void> {
  const node = simulatedName(index);
  const root = join(scaleDir, node);
  const [bin, net, serviceAccount] = [join(root, "opt/cni/bin"), join(root, "etc/cni/net.d"), join(root, "sa")];
  for (const dir of [bin, net, serviceAccount, join(root, "var/run/netns")]) mkdirSync(dir, { recursive: true });
  for (const plugin of primaryPlugins(cluster.bin)) linkSync(join(cluster.bin["cni-plugins"], plugin), join(bin, plugin));
  // The agent installs its own binary: the same bytes already there, it writes nothing (120 MB per node otherwise).
  linkSync(meshcniBinary, join(bin, "meshcni"));
  writeFileSync(join(net, "10-primary.conflist"), JSON.stringify(primaryConflist()));
  const bound = ["--bound-object-kind", "Pod", "--bound-object-name", pod.name, "--bound-object-uid", pod.uid];
  writeFileSync(
    join(serviceAccount, "token"),
    await cluster.kubectl(["create", "token", "meshcni", "-n", "meshcni", ...bound, "--duration", "2h"]),
  );
  writeFileSync(join(serviceAccount, "ca.crt"), readFileSync(join(paths.pki, "ca.crt")));
  writeFileSync(join(serviceAccount, "namespace"), "meshcni");
  startDaemon({
    name: `${daemonPrefix.meshcni}${node}`,
    ...idle(meshcniBinary, [
      "install",
      "--host-root",
      root,
      "--node",
      node,
      "--cri-socket",
      "",
      "--listen",
      `127.0.0.1:${20_000 + index}`,
      ...["--service-account-dir", serviceAccount, "--startup-taint", "meshcni.io/not-ready:NoSchedule"],
      // Its sweeps ask the API server nothing (they read the agent's cache), and a hundred of them on one host take the CPU it needs.
      ...["--audit-seconds", "3600"],
    ]),
    env: {
      KUBERNETES_SERVICE_HOST: nodeIp,
      KUBERNETES_SERVICE_PORT: String(apiserverPort),
      POD_NAMESPACE: "meshcni",
      POD_NAME: pod.name,
    },
  });
}

/** kube-proxy for simulated node `index`, in a netns of its own. */
async function startKubeProxy(cluster: RealCluster, index: number): Promise<void> {
  const node = simulatedName(index);
  // Its own netns, joined to the host by a veth: the API server is reached through it, nothing else.
  const [netns, host, inside] = [proxyNetns(node), `10.248.${index}.1`, `10.248.${index}.2`];
  await execa("ip", ["netns", "add", netns]);
  await execa("ip", ["link", "add", netns, "type", "veth", "peer", "name", "eth0", "netns", netns]);
  await execa("ip", ["addr", "add", `${host}/30`, "dev", netns]);
  await execa("ip", ["link", "set", netns, "up"]);
  const inside4 = [
    ["link", "set", "lo", "up"],
    ["addr", "add", `${inside}/30`, "dev", "eth0"],
    ["link", "set", "eth0", "up"],
  ];
  for (const argv of [...inside4, ["route", "add", `${nodeIp}/32`, "via", host]]) await execa("ip", ["-n", netns, ...argv]);
  const config = join(scaleDir, `${node}-kube-proxy.yaml`);
  mkdirSync(scaleDir, { recursive: true });
  writeFileSync(
    config,
    `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: "${kubeconfigOf(identities.proxy)}"}
mode: nftables
clusterCIDR: 10.252.0.0/16
hostnameOverride: ${node}
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack: {maxPerCore: 0}
`,
  );
  const kubeProxy = join(cluster.bin.kubernetes, "kube-proxy");
  startDaemon({
    name: `${daemonPrefix["kube-proxy"]}${node}`,
    ...idle("nsenter", [`--net=/run/netns/${proxyNetns(node)}`, "--", kubeProxy, `--config=${config}`]),
  });
}

/** Starts `component` for simulated nodes 0 to count-1. */
export async function startComponents(cluster: RealCluster, component: Component, count: number): Promise<void> {
  const pods = component === "meshcni" ? await daemonSetPods(cluster, count) : undefined;
  for (let index = 0; index < count; index++) {
    if (pods) await startAgent(cluster, index, pods.get(simulatedName(index))!);
    else await startKubeProxy(cluster, index);
  }
}

/** The pids of the running simulated components of a kind. */
export const componentDaemons = (component: Component) => recordedDaemons().filter((name) => name.startsWith(daemonPrefix[component]));

/** Stops every simulated component and removes what they had: their host roots and netns. */
export async function stopComponents(): Promise<void> {
  await Promise.all([...componentDaemons("meshcni"), ...componentDaemons("kube-proxy")].map((name) => stopDaemon(name)));
  const { stdout } = await execa("ip", ["netns", "list"]);
  for (const [netns] of stdout.matchAll(/^msc-sim-\d+/gm)) await execa("ip", ["netns", "del", netns], { reject: false });
  rmSync(scaleDir, { recursive: true, force: true });
}
