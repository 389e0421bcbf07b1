// `npm run demo`: meshcni's main job end to end on this machine. A throwaway bridge
// network, an embedded Kubernetes API server, a meshed and an unmeshed pod (network
// namespaces) added through real cnitool with Debian's bridge + host-local + meshcni,
// the rules it wrote, live TCP proof of the redirect, CHECK, DEL. Then the node agent,
// why meshcni exists: it chains meshcni into a Calico-like config, puts it back when
// Calico rewrites the file, finds a pod that started while meshcni was not chained by
// what its netns holds and redirects it in place, lifts the node's startup taint, keeps
// the node's condition, and `meshcni status` answers for the cluster. Then a new primary
// replaces the old one while pods run (demo/chain-story.ts). Then cleanup.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { AgentHarness } from "../test/kit/agent/harness.js";
import { FakeApiServer, podObject } from "../test/kit/api/server.js";
import { agentTemplate, deleteLoopbackRule, isRoot, podArgs } from "../test/kit/common.js";
import { TestNetwork } from "../test/kit/netns/network.js";
import { natRules, resultAddress } from "../test/kit/netns/plugin-process.js";
import { meshcniBinary } from "../test/kit/paths.js";
import { chainStory } from "./chain-story.js";
import { chainOf, podPorts, startServedPod } from "./pods.js";
import { show, step } from "./print.js";

const backend = "nft";

if (!isRoot) {
  console.error("the demo creates network namespaces and iptables rules: run it as root");
  process.exit(1);
}

const api = await new FakeApiServer().start();
const net = new TestNetwork(99);
const agent = new AgentHarness({ onHost: true });
try {
  const kubeconfig = api.writeKubeconfig();
  api.addPod(podObject("shop", "checkout", { proxy: "container", annotations: { "config.linkerd.io/skip-outbound-ports": "5432" } }));
  api.addPod(podObject("shop", "legacy-batch"));
  const conflist = net.writeConflist("demo-mesh", { log_level: "warn", kubernetes: { kubeconfig }, linkerd: { "iptables-mode": backend } });

  step(`network: bridge ${net.bridge} (${net.subnet}, no gateway, no route out), API server https://127.0.0.1:${api.port}`);
  console.log(readFileSync(conflist, "utf8").trimEnd().replace(/^/gm, "   "));

  step("cnitool ADD");
  const client = await net.addNetns("client");
  const clientIp = resultAddress(await net.cnitool("add", "demo-mesh", client));
  await net.serve(client, { 9090: "the real server on 9090", 5432: "the real database on 5432" });
  show("client netns (no pod identity: passed through)", clientIp);

  const meshed = await net.addNetns("checkout");
  const meshedArgs = podArgs("shop", "checkout");
  let started = performance.now();
  const meshedAdd = await net.cnitool("add", "demo-mesh", meshed, meshedArgs);
  if (meshedAdd.exitCode !== 0) throw new Error(`ADD failed: ${meshedAdd.stdout}${meshedAdd.stderr}`);
  const meshedIp = resultAddress(meshedAdd);
  show("shop/checkout (linkerd-proxy container, meshed)", `${meshedIp}  chain ADD ${Math.round(performance.now() - started)} ms`);
  await net.serve(meshed, { 4143: "the proxy's inbound port 4143", 4140: "the proxy's outbound port 4140", 8080: "the app on 8080" });

  const plain = await net.addNetns("batch");
  const plainArgs = podArgs("shop", "legacy-batch");
  const plainIp = resultAddress(await net.cnitool("add", "demo-mesh", plain, plainArgs));
  show("shop/legacy-batch (no proxy, unmeshed)", plainIp);
  await net.serve(plain, { 4143: "a stray listener on 4143", 8080: "the app on 8080" });

  step(`rules meshcni wrote in shop/checkout (iptables-${backend}-save -t nat)`);
  for (const line of await natRules(meshed, backend)) console.log(`   ${line}`);
  step(`rules in shop/legacy-batch: ${(await natRules(plain, backend)).length === 0 ? "none" : "UNEXPECTED"}`);

  step("live proof: what answers each TCP connection");
  show(`client -> checkout ${meshedIp}:8080`, await net.connect(client, meshedIp, 8080));
  show(`checkout as uid 1000 -> ${clientIp}:9090`, await net.connect(meshed, clientIp, 9090, 1000));
  show(`checkout as uid 2102 (the proxy) -> ${clientIp}:9090`, await net.connect(meshed, clientIp, 9090, 2102));
  show(`checkout as uid 1000 -> ${clientIp}:5432 (skip-outbound-ports)`, await net.connect(meshed, clientIp, 5432, 1000));
  show("checkout as uid 1000 -> 127.0.0.1:8080 (loopback)", await net.connect(meshed, "127.0.0.1", 8080, 1000));
  show(`client -> legacy-batch ${plainIp}:8080`, await net.connect(client, plainIp, 8080));

  step("cnitool CHECK");
  started = performance.now();
  const checked = await net.cnitool("check", "demo-mesh", meshed, meshedArgs);
  show(
    "shop/checkout as added",
    `${checked.exitCode === 0 ? "passes" : `FAILS: ${checked.stderr}`}  chain CHECK ${Math.round(performance.now() - started)} ms`,
  );
  await deleteLoopbackRule(meshed, backend);
  const drifted = await net.cnitool("check", "demo-mesh", meshed, meshedArgs);
  show("after deleting the loopback rule by hand", drifted.exitCode === 0 ? "passes (UNEXPECTED)" : "fails:");
  console.log(`     ${(drifted.stdout + drifted.stderr).trim()}`);

  step("cnitool DEL");
  started = performance.now();
  const deleted = await net.cnitool("del", "demo-mesh", meshed, meshedArgs);
  show("shop/checkout", `${deleted.exitCode === 0 ? "ok" : "FAILED"}  chain DEL ${Math.round(performance.now() - started)} ms`);
  show("rules left in shop/checkout", String((await natRules(meshed, backend)).length));
  show("DEL again", (await net.cnitool("del", "demo-mesh", meshed, meshedArgs)).exitCode === 0 ? "ok" : "FAILED");
  await net.cnitool("del", "demo-mesh", plain, plainArgs);

  await agentStory(client);
  await net.cnitool("del", "demo-mesh", client);
} finally {
  await agent.cleanup();
  await net.cleanup();
  await api.stop();
  step("cleaned up: namespaces, bridge, files");
}

/** The node agent's part: what a node goes through, and what meshcni does about it. */
async function agentStory(client: string): Promise<void> {
  const node = "demo-node";
  const taint = { key: "meshcni.io/not-ready", effect: "NoSchedule" };
  const calico = "10-calico.conflist";
  const calicoConfig = `${JSON.stringify(net.primaryConflist("k8s-pod-network"), null, 2)}\n`;
  const since = (line: number) => agent.logs.slice(line);
  const logged = (from: number, msg: string) => agent.waitFor(() => since(from).some((line) => line.msg === msg), 15_000);

  step("the node agent (meshcni install): why meshcni exists");
  console.log("   A node boots: kubelet registers it tainted meshcni.io/not-ready, Calico writes its config,");
  console.log("   and two pods are started before meshcni is chained (the race every chained CNI has); one is in");
  console.log("   namespace batch, which the operator told the agent never to touch (--repair-exclude-namespaces).");
  api.addNode({
    metadata: { name: node },
    spec: { taints: [taint] },
    status: { conditions: [{ type: "Ready", status: "True", reason: "KubeletReady" }] },
  });
  writeFileSync(join(net.confDir, "plain.conflist"), JSON.stringify(net.primaryConflist("plain")));
  writeFileSync(agent.path(calico), calicoConfig);
  const early = await net.startPod(api, { namespace: "shop", name: "early-bird", network: "plain", node, options: { owned: true } });
  await net.serve(early.netns, podPorts);
  show(`client -> shop/early-bird ${early.ip}:8080 (no redirect yet)`, await net.connect(client, early.ip, 8080));
  const nightly = await net.startPod(api, { namespace: "batch", name: "nightly", network: "plain", node, options: { owned: true } });

  const started = performance.now();
  await agent.startWithApi(api, [
    ...["--template", agentTemplate(net.stateDir), "--node", node, "--state-dir", net.stateDir],
    ...["--startup-taint", "meshcni.io/not-ready:NoSchedule", "--cri-socket", await net.criSocket(), "--repair", "redirect"],
    ...["--repair-exclude-namespaces", "batch"],
  ]);
  await logged(0, "chained meshcni");
  show(`agent started: meshcni chained into ${calico}`, `${Math.round(performance.now() - started)} ms after start`);
  await agent.waitFor(() => ((api.nodes.get(node)?.spec ?? {}) as { taints?: unknown[] }).taints?.length === 0, 15_000);
  show("startup taint meshcni.io/not-ready (pods may be scheduled)", `lifted ${Math.round(performance.now() - started)} ms after start`);

  step("the sweep finds shop/early-bird by what its netns holds, and redirects it in place");
  await agent.waitFor(async () => (await agent.metric('meshcni_repairs_total{action="redirect",result="done"}')) >= 1, 15_000);
  const repaired = agent.logs.find((line) => line.msg === "meshed pod without its redirect" && line.pod === "shop/early-bird");
  show(
    "the agent's verdict",
    `${repaired?.status}, ${repaired?.action}: ${JSON.stringify(repaired?.result)} (${Math.round(performance.now() - started)} ms after start)`,
  );
  show(`client -> shop/early-bird ${early.ip}:8080 (not restarted)`, await net.connect(client, early.ip, 8080));
  const event = api.events.find((held) => (held.involvedObject as { name: string }).name === "early-bird");
  console.log(`   Event on the pod: ${event?.type} ${event?.reason} (${event?.action})`);
  console.log(`     ${event?.message}`);
  const series = async (prefix: string) => (await agent.scrape()).split("\n").find((line) => line.startsWith(prefix));
  console.log(`   metric: ${await series('meshcni_repairs_total{action="redirect",result="done"')}`);
  await agent.waitFor(async () => (await series("meshcni_unprotected_pod{")) !== undefined, 15_000);
  show(`batch/nightly ${nightly.ip} (excluded: left alone)`, "still without its redirect");
  const page = await series("meshcni_unprotected_pod{");
  console.log(`   metric: ${page}  <- MeshcniMeshedPodUnprotected pages on it after 5 minutes`);

  step(`Calico rewrites ${calico} in place, without meshcni's entry`);
  for (const round of [1, 2, 3]) {
    const from = agent.logs.length;
    agent.writeInPlace(calico, calicoConfig);
    await logged(from, "re-chained meshcni");
    const line = since(from).find((entry) => entry.msg === "re-chained meshcni");
    show(`rewrite ${round}: the agent put meshcni back`, `${line?.latencyMs} ms after the write`);
  }
  show(`${calico} now chains`, chainOf(agent, calico));

  step("a pod started now: the agent decides and writes its redirect, the plugin process only asks");
  const from = agent.logs.length;
  const late = await startServedPod(api, net, agent, node, "late-arrival", "k8s-pod-network");
  show(`client -> shop/late-arrival ${late.ip}:8080`, await net.connect(client, late.ip, 8080));
  const applied = since(from).find((line) => line.msg === "redirect applied");
  show("written by the agent's writer, in the netns the plugin opened", `${applied?.msg} (${applied?.backend}, ${applied?.family})`);
  console.log(`   metric: ${await series('meshcni_agent_writes_total{verb="ADD",result="done"')}`);

  step("the node's condition, and one answer for the whole cluster");
  await agent.waitFor(
    () => /meshed pods?: /.test(api.nodeConditions(node).find((held) => held.type === "MeshcniReady")?.message ?? ""),
    20_000,
  );
  const condition = api.nodeConditions(node).find((held) => held.type === "MeshcniReady");
  console.log(`   ${node} MeshcniReady=${condition?.status} reason=${condition?.reason}: ${condition?.message}`);
  const status = await execa(meshcniBinary, ["status", "--kubeconfig", api.writeKubeconfig()], { reject: false });
  console.log(`   $ meshcni status   (exit ${status.exitCode})`);
  console.log(status.stdout.replace(/^/gm, "   "));
  await chainStory(api, net, agent, node, client);
}
