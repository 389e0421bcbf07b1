// `npm run demo`: meshcni's main job end to end on this machine. A throwaway bridge
// network, an embedded Kubernetes API server, a meshed and an unmeshed pod (network
// namespaces) added through real cnitool with Debian's bridge + host-local + meshcni,
// the rules it wrote, live TCP proof of the redirect, CHECK, DEL, and cleanup.
import { readFileSync } from "node:fs";
import { FakeApiServer, podObject } from "../test/kit/api-server.js";
import { deleteLoopbackRule, isRoot, podArgs } from "../test/kit/common.js";
import { natRules, TestNetwork } from "../test/kit/network.js";

const backend = "nft";
const step = (title: string) => console.log(`\n== ${title}`);
const show = (label: string, value: string) => console.log(`   ${label.padEnd(64)} ${value}`);

if (!isRoot) {
  console.error("the demo creates network namespaces and iptables rules: run it as root");
  process.exit(1);
}

const api = await new FakeApiServer().start();
const net = new TestNetwork(99);
try {
  const kubeconfig = api.writeKubeconfig();
  api.addPod(podObject("shop", "checkout", { proxy: "container", annotations: { "config.linkerd.io/skip-outbound-ports": "5432" } }));
  api.addPod(podObject("shop", "legacy-batch"));
  const conflist = net.writeConflist("demo-mesh", { log_level: "warn", kubernetes: { kubeconfig }, linkerd: { "iptables-mode": backend } });

  step(`network: bridge ${net.bridge} (${net.subnet}, no gateway, no route out), API server https://127.0.0.1:${api.port}`);
  console.log(readFileSync(conflist, "utf8").trimEnd().replace(/^/gm, "   "));

  step("cnitool ADD");
  const client = await net.addNetns("client");
  const clientIp = TestNetwork.address(await net.cnitool("add", "demo-mesh", client));
  await net.serve(client, { 9090: "the real server on 9090", 5432: "the real database on 5432" });
  show("client netns (no pod identity: passed through)", clientIp);

  const meshed = await net.addNetns("checkout");
  const meshedArgs = podArgs("shop", "checkout");
  let started = performance.now();
  const meshedAdd = await net.cnitool("add", "demo-mesh", meshed, meshedArgs);
  if (meshedAdd.exitCode !== 0) throw new Error(`ADD failed: ${meshedAdd.stdout}${meshedAdd.stderr}`);
  const meshedIp = TestNetwork.address(meshedAdd);
  show("shop/checkout (linkerd-proxy container, meshed)", `${meshedIp}  chain ADD ${Math.round(performance.now() - started)} ms`);
  await net.serve(meshed, { 4143: "the proxy's inbound port 4143", 4140: "the proxy's outbound port 4140", 8080: "the app on 8080" });

  const plain = await net.addNetns("batch");
  const plainArgs = podArgs("shop", "legacy-batch");
  const plainIp = TestNetwork.address(await net.cnitool("add", "demo-mesh", plain, plainArgs));
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
  await net.cnitool("del", "demo-mesh", client);
} finally {
  await net.cleanup();
  await api.stop();
  step("cleaned up: namespaces, bridge, files");
}
