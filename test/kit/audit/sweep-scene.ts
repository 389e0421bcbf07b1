import type { V1Pod } from "@kubernetes/client-node";
import type { SweepRequest } from "../../../src/audit/contract.js";
import { plansFor } from "../../../src/audit/expectation.js";
import { parseNetConf } from "../../../src/mesh/netconf.js";
import { add } from "../../../src/plugin/add.js";
import { type PodOptions, podObject } from "../api/server.js";
import type { FakeNode } from "../plugin/fake-node.js";
import { pluginRequest } from "../plugin/requests.js";
import { netnsDir, stateDir } from "./fake-sweep.js";

/** The default netconf, as ADD and a sweep read it. */
export const sweepConf = parseNetConf(JSON.stringify({ cniVersion: "1.0.0", name: "k8s", type: "meshcni" }));

/** A sweep request for node n1 over the fake node's dirs, with this policy and limits. */
export const sweepOptions = (policy: SweepRequest["policy"], more: Partial<SweepRequest["limits"]> = {}): SweepRequest => ({
  node: "n1",
  pods: [],
  ...(policy ? { policy } : {}),
  limits: { excludeNamespaces: [], skipUids: [], evictionsLeft: 2, ...more },
  dirs: { hostRoot: "/", stateDir, netDir: "/etc/cni/net.d", netnsDirs: [netnsDir], criSocket: "" },
});

/** Pods on the suite's FakeNode (`node()`, made anew for each test), as the sweep suites start them. */
export function sweepScene(node: () => FakeNode) {
  let ip = 10;
  /** A running meshed pod with a netns holding its IP (the runtime's, not meshcni's: no rules yet). */
  const startPod = (name: string, podOptions: PodOptions = {}) => {
    const podIP = `10.1.0.${ip++}`;
    const pod = podObject("shop", name, { proxy: "container", nodeName: "n1", podIP, ...podOptions }) as V1Pod;
    node().addPod(pod);
    node().addNetns(`${netnsDir}/cni-${name}`, [podIP]);
    node().sandboxes.set(pod.metadata!.uid!, `${netnsDir}/cni-${name}`);
    return { pod, netns: `${netnsDir}/cni-${name}` };
  };
  /** Rules as linkerd-cni (or meshcni without its record) would have written them. */
  const writeRules = async (pod: V1Pod, netns: string) =>
    node().enter(netns, async () => {
      await node()
        .redirector("nft")
        .apply(plansFor(sweepConf, pod, undefined, []));
    });
  /** A pod that went through meshcni's ADD, record and all. */
  const addedPod = async (name: string, podOptions: PodOptions = {}) => {
    const { pod, netns } = startPod(name, podOptions);
    await add(pluginRequest("ADD", { pod: ["shop", name], netns, containerId: `c-${name}`, conf: { state_dir: stateDir } }), node().deps());
    return { pod, netns };
  };
  return { startPod, writeRules, addedPod };
}
