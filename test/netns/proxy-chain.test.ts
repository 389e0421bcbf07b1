import { type ChildProcess, spawn } from "node:child_process";
import { execa } from "execa";
import { afterAll, beforeAll, expect, it } from "vitest";
import { FakeApiServer, podObject } from "../kit/api/server.js";
import { probeBinary } from "../kit/cluster/images.js";
import { proxyUid } from "../kit/cluster/workloads.js";
import { podArgs, until } from "../kit/common.js";
import { TestNetwork } from "../kit/netns/network.js";
import { resultAddress } from "../kit/netns/plugin-process.js";
import { describeAsRoot } from "../kit/root-suites.js";

/**
 * The real cluster's probe as a forwarding proxy (a banner ending in ">"): a meshed pod's
 * connection to another meshed pod goes through its own proxy, then the other's, then to the
 * app, each hop naming the original destination it saw. What issue 43's scenarios across
 * nodes stand on; proven here on two pods redirected by the compiled plugin.
 */
describeAsRoot("the probe's forwarding proxies, through two meshed pods", () => {
  const api = new FakeApiServer();
  const net = new TestNetwork(92);
  const pods: Record<string, { netns: string; ip: string }> = {};
  const servers: ChildProcess[] = [];
  let probe = "";
  const inPod = (netns: string, argv: string[], uid?: number) => [
    // nsenter and setpriv exec (ip netns exec forks): the probe is the process killed at the end.
    ...["nsenter", `--net=/run/netns/${netns}`],
    ...(uid === undefined ? [] : ["setpriv", `--reuid=${uid}`, `--regid=${uid}`, "--clear-groups"]),
    probe,
    ...argv,
  ];
  const serve = async (netns: string, listeners: string[], uid?: number) => {
    const [command, ...args] = inPod(netns, ["serve", ...listeners], uid);
    servers.push(spawn(command!, args, { stdio: "ignore" }));
    for (const port of listeners.map((listener) => listener.split("=")[0]!.slice(1)))
      await until(async () => (await execa("ip", ["netns", "exec", netns, "ss", "-ltnH", `sport = :${port}`])).stdout !== "", 10_000, 50);
  };
  const connect = async (from: string, target: string, uid?: number) => {
    const [command, ...args] = inPod(from, ["connect", target], uid);
    return (await execa(command!, args, { reject: false })).stdout.trim();
  };

  beforeAll(async () => {
    probe = await probeBinary();
    await api.start();
    net.writeConflist("mesh", { kubernetes: { kubeconfig: api.writeKubeconfig() } });
    for (const name of ["client", "server"]) {
      api.addPod(podObject("demo", name, { proxy: "container" }));
      const netns = await net.addNetns(name);
      const added = await net.cnitool("add", "mesh", netns, podArgs("demo", name));
      expect(added.exitCode, added.stderr + added.stdout).toBe(0);
      pods[name] = { netns, ip: resultAddress(added) };
      await serve(netns, [`:8080=${name}`]);
      await serve(netns, [":4143=proxy-inbound>", ":4140=proxy-outbound>"], proxyUid);
    }
  });

  afterAll(async () => {
    for (const server of servers) server.kill("SIGKILL");
    await net.cleanup();
    await api.stop();
  });

  it("answers through the client's outbound proxy, the server's inbound proxy and the app, each naming the original destination", async () => {
    const { client, server } = pods as Record<string, { netns: string; ip: string }>;
    const target = `${server!.ip}:8080`;
    expect(await connect(client!.netns, target)).toBe(
      `proxy-outbound dst=${target} src=${client!.ip} > proxy-inbound dst=${target} src=${client!.ip} > server dst=${target} src=${server!.ip}`,
    );
  });

  it("forwards nothing that was not redirected to it: a connection to the proxy's own port gets its line alone", async () => {
    const { client } = pods as Record<string, { netns: string; ip: string }>;
    // As the proxy's user: exempt from the outbound redirect, so it reaches port 4140 itself.
    expect(await connect(client!.netns, `${client!.ip}:4140`, proxyUid)).toBe(`proxy-outbound dst=${client!.ip}:4140 src=${client!.ip}`);
  });
});
