import { readFileSync } from "node:fs";
import type { AgentHarness } from "../test/kit/agent/harness.js";
import type { FakeApiServer } from "../test/kit/api/server.js";
import type { TestNetwork } from "../test/kit/netns/network.js";

/** What answers in a demo pod: its proxy's inbound port and its app. */
export const podPorts = { 4143: "the proxy's inbound port 4143", 8080: "the app on 8080, in plaintext" };

/** A meshed pod of shop started as the node's runtime would, through the agent's net and bin dirs, serving podPorts. */
export async function startServedPod(
  api: FakeApiServer,
  net: TestNetwork,
  agent: AgentHarness,
  node: string,
  name: string,
  network: string,
) {
  const pod = await net.startPod(api, { namespace: "shop", name, network, node, dirs: { conf: agent.netDir, bin: agent.binDir } });
  await net.serve(pod.netns, podPorts);
  return pod;
}

/** The plugin types a config of the agent's net dir chains, as `a -> b`. */
export const chainOf = (agent: AgentHarness, name: string) =>
  (JSON.parse(readFileSync(agent.path(name), "utf8")) as { plugins: Array<{ type: string }> }).plugins
    .map((plugin) => plugin.type)
    .join(" -> ");
