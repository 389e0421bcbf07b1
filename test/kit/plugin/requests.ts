import type { V1Pod } from "@kubernetes/client-node";
import type { Verb } from "../../../src/cni/env.js";
import { parseNetConf } from "../../../src/mesh/netconf.js";
import type { PluginRequest } from "../../../src/plugin/request.js";
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
