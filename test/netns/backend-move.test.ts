import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, expect, it } from "vitest";
import { AgentHarness } from "../kit/agent/harness.js";
import { FakeApiServer } from "../kit/api/server.js";
import { agentTemplate } from "../kit/common.js";
import { TestNetwork } from "../kit/netns/network.js";
import { natRules } from "../kit/netns/plugin-process.js";
import { type Answers, startProbe } from "../kit/netns/probe.js";
import { describeAsRoot } from "../kit/root-suites.js";

const node = "node-m";
type Mode = "nft" | "nftables" | "legacy";

/**
 * The node's backend changed under running pods, as an operator does it: meshcni's
 * iptables-mode changed and its agent rolled (stopped, started with the new entry). The new
 * agent's sweep moves every running meshed pod's redirect to the new backend in place: no
 * pod restarted, and real TCP, in and out, through the proxy at every moment of the move.
 */
describeAsRoot("a backend switch without a restart", () => {
  const api = new FakeApiServer();
  const net = new TestNetwork(91);
  const host = new AgentHarness({ onHost: true });
  const pods: Array<{ name: string; netns: string; ip: string }> = [];
  let client = { netns: "", ip: "" };

  /** The backend a pod's ADD record names. */
  const backendOf = (name: string) => {
    const dir = join(net.stateDir, "attachments");
    // The records alone: a writer's temp file beside them may be empty yet.
    const records = readdirSync(dir)
      .filter((file) => file.endsWith(".json"))
      .map((file) => JSON.parse(readFileSync(join(dir, file), "utf8")) as { pod: { name: string }; backend: string });
    return records.find((record) => record.pod.name === name)?.backend;
  };
  const recordedBackends = () => pods.map((pod) => backendOf(pod.name));
  /** What each backend holds of the redirect in a pod's netns. */
  const held = async (netns: string) => ({
    nft: (await natRules(netns, "nft")).includes(":PROXY_INIT_REDIRECT - [0:0]"),
    legacy: (await natRules(netns, "legacy")).includes(":PROXY_INIT_REDIRECT - [0:0]"),
    nftables: (await execa("ip", ["netns", "exec", netns, "nft", "list", "table", "ip", "meshcni"], { reject: false })).exitCode === 0,
  });
  const moves = (from: Mode, to: Mode) => host.metric(`meshcni_redirect_moves_total{from="${from}",to="${to}",result="done"}`);

  const startAgent = async (mode: Mode) => {
    const template = agentTemplate(net.stateDir, { linkerd: { "iptables-mode": mode } });
    const args = ["--template", template, "--node", node, "--state-dir", net.stateDir, "--audit-seconds", "1"];
    // --on-stop keep: a rollout's stop, which leaves the chain and the pods' rules to the next agent.
    await host.startWithApi(api, [...args, "--cri-socket", await net.criSocket(), "--on-stop", "keep"], { POD_NAMESPACE: "meshcni" });
  };
  const startMeshedPod = async (name: string) => {
    const pod = await net.startPod(api, {
      namespace: "shop",
      name,
      network: "primary",
      node,
      dirs: { conf: host.netDir, bin: host.binDir },
    });
    await net.serve(pod.netns, { 4143: "proxy-inbound", 4140: "proxy-outbound", 8080: "app" });
    return { name, ...pod };
  };

  /** Rolls the agent to another backend while probes connect into one pod and out of another; what they heard. */
  const switchTo = async (from: Mode, to: Mode): Promise<{ inbound: Answers; outbound: Answers }> => {
    const inbound = await startProbe(client.netns, pods[0]!.ip, 8080);
    const outbound = await startProbe(pods[1]!.netns, client.ip, 8080);
    await host.stop();
    await startAgent(to);
    const moved = async () => recordedBackends().every((backend) => backend === to) && (await moves(from, to)) === pods.length;
    // Within 60 s: under npm test's load (cluster suites beside it on 2 cores) the agent's start and first sweeps took over 20.
    await host.waitFor(moved, 60_000).catch(() => {
      throw new Error(`not moved: ${JSON.stringify(recordedBackends())}\n${host.stderr.slice(-10).join("\n")}`);
    });
    return { inbound: await inbound.stop(), outbound: await outbound.stop() };
  };

  beforeAll(async () => {
    await api.start();
    api.addNode({ metadata: { name: node } });
    writeFileSync(join(net.confDir, "plain.conflist"), JSON.stringify(net.primaryConflist("plain")));
    writeFileSync(host.path("10-primary.conflist"), JSON.stringify(net.primaryConflist("primary")));
    client = await net.startPod(api, { namespace: "shop", name: "client", network: "plain", node, options: { proxy: false } });
    await net.serve(client.netns, { 8080: "client-app" });
    await startAgent("nft");
    await host.waitFor(
      () => host.logs.some((line) => line.msg === "answering the plugin") && host.types("10-primary.conflist").at(-1) === "meshcni",
      10_000,
    );
    for (const name of ["web", "api"]) pods.push(await startMeshedPod(name));
  }, 60_000);

  afterAll(async () => {
    await host.cleanup();
    await net.cleanup();
    await api.stop();
  });

  it("pods ADDed with iptables-nft hold their redirect there, and it works", async () => {
    expect(recordedBackends()).toEqual(["nft", "nft"]);
    for (const pod of pods) expect(await held(pod.netns)).toEqual({ nft: true, legacy: false, nftables: false });
    expect(await net.connect(client.netns, pods[0]!.ip, 8080)).toBe("proxy-inbound");
    expect(await net.connect(pods[1]!.netns, client.ip, 8080)).toBe("proxy-outbound");
  });

  it("to nftables: every running pod's redirect moves in place, with every connection in and out through the proxy meanwhile", async () => {
    const heard = await switchTo("nft", "nftables");
    expect(Object.keys(heard.inbound)).toEqual(["proxy-inbound"]);
    expect(Object.keys(heard.outbound)).toEqual(["proxy-outbound"]);
    expect(heard.inbound["proxy-inbound"]).toBeGreaterThan(100);
    process.stdout.write(`\nnft -> nftables: ${JSON.stringify(heard)} connections, none past the proxy\n`);
    for (const pod of pods) expect(await held(pod.netns)).toEqual({ nft: false, legacy: false, nftables: true });
    // No pod restarted: the same netns, the same listeners, no Event, nothing asked of the API about the pods.
    expect(await net.connect(client.netns, pods[0]!.ip, 8080)).toBe("proxy-inbound");
    expect(api.events).toEqual([]);
    expect(api.requestsTo("DELETE", /\/pods\//)).toEqual([]);
    expect(api.requestsTo("POST", /\/eviction$/)).toEqual([]);
    const moved = host.logs.filter((line) => line.msg === "moved a pod's redirect to the node's backend");
    expect(moved.map((line) => [line.pod, line.from, line.to]).sort()).toEqual([
      ["shop/api", "nft", "nftables"],
      ["shop/web", "nft", "nftables"],
    ]);
  }, 120_000);

  it("a pod started after the switch is ADDed with nftables; the next sweeps move nothing more", async () => {
    const late = await startMeshedPod("late");
    pods.push(late);
    expect(backendOf("late")).toBe("nftables");
    expect(await held(late.netns)).toEqual({ nft: false, legacy: false, nftables: true });
    const before = await moves("nft", "nftables");
    await host.waitFor(async () => ((await host.metric("meshcni_audit_duration_seconds_count")) ?? 0) >= 3, 10_000);
    expect(await moves("nft", "nftables")).toBe(before);
  });

  it("and back to iptables (legacy this time), the same way", async () => {
    const heard = await switchTo("nftables", "legacy");
    expect(Object.keys(heard.inbound)).toEqual(["proxy-inbound"]);
    expect(Object.keys(heard.outbound)).toEqual(["proxy-outbound"]);
    process.stdout.write(`\nnftables -> legacy: ${JSON.stringify(heard)} connections, none past the proxy\n`);
    for (const pod of pods) expect(await held(pod.netns)).toEqual({ nft: false, legacy: true, nftables: false });
    expect(await net.connect(pods[1]!.netns, client.ip, 8080)).toBe("proxy-outbound");
  }, 120_000);
});
