import type { V1Pod } from "@kubernetes/client-node";
import type { Verb } from "../../../src/cni/env.js";
import { parseNetConf } from "../../../src/mesh/netconf.js";
import type { PluginDeps, PluginRequest, RedirectorSettings } from "../../../src/plugin/request.js";
import type { Backend } from "../../../src/redirect/redirector.js";
import { podObject } from "../api/server.js";
import { podArgs } from "../common.js";
import { FakeNode } from "./fake-node.js";

/** A request as the runtime would make it: a netconf through the real parser, CNI_ARGS naming `pod`. */
export function pluginRequest(
  command: Verb,
  options: {
    pod?: [namespace: string, name: string];
    netns?: string;
    containerId?: string;
    ifname?: string;
    conf?: Record<string, unknown>;
  } = {},
): PluginRequest {
  const { pod, netns = "/var/run/netns/pod", containerId = "c1", ifname = "eth0", conf = {} } = options;
  return {
    env: { command, containerId, netns, ifname, args: pod ? podArgs(...pod) : "", path: "" },
    conf: parseNetConf(JSON.stringify({ cniVersion: "1.0.0", name: "mesh", type: "meshcni", state_dir: "/state", ...conf })),
  };
}

/** The pod netns the verb tests work in. */
export const podNetns = "/var/run/netns/pod";

/** A node with one pod netns and, in the API, shop/web (meshed) and shop/batch (no proxy). */
export function nodeWithPods(): FakeNode {
  const node = new FakeNode();
  node.addNetns(podNetns);
  node.addPod(podObject("shop", "web", { proxy: "container" }) as V1Pod);
  node.addPod(podObject("shop", "batch") as V1Pod);
  return node;
}

/** Makes the record of ADD's attachment (c1/eth0) name another backend: a pod ADDed before the node's iptables-mode changed. */
export function recordBackend(node: FakeNode, backend: Backend): void {
  const store = node.recordStore("/state");
  const { version: _version, time: _time, ...kept } = store.read({ containerID: "c1", ifname: "eth0" })!;
  store.write({ ...kept, backend });
}

/** The node's deps, noting every redirector a verb asks for (and its mode); `refused` modes fail with that message. */
export function depsNotingModes(
  node: FakeNode,
  refused: Record<string, string> = {},
): { deps: PluginDeps; modes: string[]; settings: RedirectorSettings[] } {
  const modes: string[] = [];
  const asked: RedirectorSettings[] = [];
  const deps = node.deps();
  return {
    modes,
    settings: asked,
    deps: {
      ...deps,
      redirector: async (settings) => {
        modes.push(settings.mode);
        asked.push(settings);
        if (refused[settings.mode]) throw new Error(refused[settings.mode]);
        return deps.redirector(settings);
      },
    },
  };
}
