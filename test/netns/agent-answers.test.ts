import { rmSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { FakeApiServer, podObject } from "../kit/api/server.js";
import { meshcniNetconf, podArgs } from "../kit/common.js";
import { TestNetwork } from "../kit/netns/network.js";
import { invokePlugin, natRules, pluginEnv } from "../kit/netns/plugin-process.js";
import { describeAsRoot } from "../kit/root-suites.js";

/**
 * How the plugin reads an agent's answer, with agents of the test's making on the socket:
 * each takes the question and the netns passed with it, then answers its own way.
 */
describeAsRoot("the plugin reading the agent's answer", () => {
  const api = new FakeApiServer();
  const net = new TestNetwork(87);
  const socket = () => join(api.dir, "fake-agent.sock");
  let kubeconfig = "";
  let stopAgent = async () => {};

  /** An agent on the socket that answers each question by sending `chunks` (Python bytes literals), `everyMs` apart. */
  const startAgent = async (chunks: string, everyMs: number) => {
    const server = [
      "import os,socket,sys,time",
      "s=socket.socket(socket.AF_UNIX)",
      "s.bind(sys.argv[1]);s.listen();print('up',flush=True)",
      "while True:",
      "  c,_=s.accept()",
      "  msg,fds,_,_=socket.recv_fds(c,65536,4)",
      "  for fd in fds: os.close(fd)",
      "  try:",
      `    for chunk in ${chunks}:`,
      "      c.sendall(chunk);time.sleep(float(sys.argv[2]))",
      "  except OSError: pass",
      "  c.close()",
    ].join("\n");
    const started = execa("python3", ["-c", server, socket(), String(everyMs / 1000)], { reject: false });
    stopAgent = async () => {
      started.kill("SIGKILL");
      await started;
    };
    await new Promise<void>((resolve, reject) => {
      started.stdout?.once("data", () => resolve());
      void started.then((ended) => reject(new Error(`the fake agent ended: ${ended.stderr}`)));
    });
  };

  const add = async (name: string) => {
    const netns = await net.addNetns(name);
    const conf = meshcniNetconf({ stateDir: net.stateDir, kubeconfig }, { agent_socket: socket() });
    const result = await invokePlugin(
      pluginEnv(net.netnsPath(netns), `c-${name}`, `${podArgs("shop", "web")};K8S_POD_UID=uid-shop-web`),
      conf,
    );
    return { result, netns };
  };

  beforeAll(async () => {
    await api.start();
    kubeconfig = api.writeKubeconfig();
    api.addPod(podObject("shop", "web", { proxy: "container" }));
  });

  afterEach(async () => {
    await stopAgent();
    rmSync(socket(), { force: true });
  });

  afterAll(async () => {
    await net.cleanup();
    await api.stop();
  });

  it("stops waiting for an answer that drips in a byte at a time and never ends its line: ADD asks the API itself", async () => {
    await startAgent("iter(lambda: b'{', None)", 300);
    const { result, netns } = await add("drip");
    // Unbounded, each byte restarted the socket's 2 s, and the plugin, blocked in its receive (its watchdog cannot run), waited for as long as bytes came.
    expect(result.exitCode, result.stdout).toBe(0);
    expect(result.stderr).toContain("no answer within 2000 ms");
    expect(result.stderr).toContain("asking the API server instead of the agent");
    expect(await natRules(netns, "nft")).toContain(":PROXY_INIT_REDIRECT - [0:0]");
  });

  it("takes an answer sent in pieces as one: the agent's refusal is ADD's error", async () => {
    const msg = `refused: ${"x".repeat(1000)}`;
    const answer = JSON.stringify({ refused: { code: 7, msg, details: "" } });
    await startAgent(`[${JSON.stringify(answer.slice(0, 10))}.encode(), ${JSON.stringify(`${answer.slice(10)}\n`)}.encode()]`, 50);
    const { result, netns } = await add("pieces");
    expect(result.exitCode).toBe(1);
    expect(JSON.parse(result.stdout)).toMatchObject({ code: 7, msg });
    expect(await natRules(netns, "nft")).toEqual([]);
  });
});
