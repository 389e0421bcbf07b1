// The demo's third story: the primary CNI replaced by another while pods run (the seed's
// Cilium over azure-vnet). The new primary's config lands before its plugin is installed:
// the chain cannot run, and the node's condition and `meshcni status` say so, while meshcni
// stays in the old config (where CRI-O falls back). The old config is set aside, the plugin
// arrives, meshcni follows into the new config and leaves nothing in the old one.
import { copyFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import type { AgentHarness } from "../test/kit/agent/harness.js";
import type { FakeApiServer } from "../test/kit/api/server.js";
import type { TestNetwork } from "../test/kit/netns/network.js";
import { debianPlugins, meshcniBinary } from "../test/kit/paths.js";
import { chainOf, startServedPod } from "./pods.js";
import { show, step } from "./print.js";

export async function chainStory(api: FakeApiServer, net: TestNetwork, agent: AgentHarness, node: string, client: string): Promise<void> {
  const old = "10-calico.conflist";
  const next = "05-cilium.conflist";
  const condition = () => api.nodeConditions(node).find((held) => held.type === "MeshcniReady");

  step("a new primary takes over while pods run: its config first, its plugin not yet installed");
  console.log("   (Cilium is played by Debian's bridge plugin installed under the name cilium-cni.)");
  const config = net.primaryConflist("cilium");
  config.plugins[0]!.type = "cilium-cni";
  writeFileSync(agent.path(next), `${JSON.stringify(config, null, 2)}\n`);
  await agent.waitFor(() => condition()?.reason === "ChainBroken", 15_000);
  show(`${next} now chains`, chainOf(agent, next));
  show(`${old} still chains (CRI-O's fallback)`, chainOf(agent, old));
  console.log(`   ${node} MeshcniReady=${condition()?.status} reason=${condition()?.reason}: ${condition()?.message}`);
  const metric = (await agent.scrape()).split("\n").find((line) => line.startsWith("meshcni_chain_missing_plugin{"));
  console.log(`   metric: ${metric}  <- MeshcniChainBroken pages on it after 5 minutes`);
  const status = await execa(meshcniBinary, ["status", "--kubeconfig", api.writeKubeconfig()], { reject: false });
  console.log(`   $ meshcni status   (exit ${status.exitCode})`);
  console.log(status.stdout.replace(/^/gm, "   "));

  step("the new primary sets the old config aside and installs its plugin; meshcni follows");
  renameSync(agent.path(old), agent.path(`${old}.cilium_bak`));
  copyFileSync(join(debianPlugins, "bridge"), join(agent.binDir, "cilium-cni"));
  await agent.waitFor(() => condition()?.status === "True", 15_000);
  show(`${next} chains`, chainOf(agent, next));
  show(`${old}.cilium_bak (set aside) chains`, chainOf(agent, `${old}.cilium_bak`));
  console.log(`   ${node} MeshcniReady=${condition()?.status} reason=${condition()?.reason}`);
  const pod = await startServedPod(api, net, agent, node, "after-cilium", "cilium");
  show(`client -> shop/after-cilium ${pod.ip}:8080 (through the new chain)`, await net.connect(client, pod.ip, 8080));
}
