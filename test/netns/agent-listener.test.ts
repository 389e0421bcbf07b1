import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { AgentHarness } from "../kit/agent/harness.js";
import { FakeApiServer, podObject } from "../kit/api/server.js";
import { agentTemplate, podArgs } from "../kit/common.js";
import { TestNetwork } from "../kit/netns/network.js";
import { invokePlugin, natRules, pluginEnv } from "../kit/netns/plugin-process.js";
import { describeAsRoot } from "../kit/root-suites.js";

const node = "node-l";

/**
 * Someone else's listener on the agent's socket (issue 57's first finding): root without a
 * capability, on the host's network, with the socket's directory reached through a hostPath,
 * puts its own listener where the agent's socket is and answers every question as it likes.
 * The plugin proves whom it asks before it sends anything: such a listener is sent nothing,
 * no netns, and believed in nothing; the pod gets its redirect the plugin's own way. The
 * agent takes its socket back.
 */
describeAsRoot("a listener of someone else's on the agent's socket", () => {
  const api = new FakeApiServer();
  const net = new TestNetwork(87);
  const host = new AgentHarness({ onHost: true });
  const socket = () => join(net.stateDir, "agent", "plugin.sock");
  const canary = join(mkdtempSync(join(tmpdir(), "meshcni-canary-")), "ld.so.preload");
  let entry: Record<string, unknown> = {};
  let listener: ChildProcess | undefined;
  const heard = join(mkdtempSync(join(tmpdir(), "meshcni-heard-")), "heard");

  /** Listens at the agent's socket as root with no capability, answering `answer` to whatever comes; what it got goes to `heard`. */
  const listenAsOther = async (answer: object) => {
    const server = [
      "import os,socket,sys",
      "path,answer,heard=sys.argv[1],sys.argv[2].encode()+b'\\n',sys.argv[3]",
      "os.path.exists(path) and os.unlink(path)",
      "s=socket.socket(socket.AF_UNIX); s.bind(path); s.listen(8); print('listening',flush=True)",
      "while True:",
      "  c,_=s.accept(); c.settimeout(3)",
      "  try:",
      "    data,fds,_,_=socket.recv_fds(c,65536,4)",
      "  except Exception:",
      "    data,fds=b'',[]",
      "  open(heard,'a').write(f'{len(data)} {len(fds)}\\n')",
      "  c.sendall(answer) if data else None",
      "  c.close()",
    ].join("\n");
    writeFileSync(heard, "");
    const args = ["--bounding-set=-all", "--inh-caps=-all", "/usr/bin/python3", "-c", server, socket(), JSON.stringify(answer), heard];
    listener = spawn("setpriv", args, { stdio: ["ignore", "pipe", "inherit"] });
    await new Promise<void>((resolve) => listener!.stdout!.once("data", () => resolve()));
  };
  const connections = () =>
    readFileSync(heard, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((line) => line.split(" ").map(Number));

  const addPod = async (name: string) => {
    api.addPod(podObject("shop", name, { proxy: "container", nodeName: node }));
    const netns = await net.addNetns(name);
    const env = pluginEnv(net.netnsPath(netns), `c-${name}`, `${podArgs("shop", name)};K8S_POD_UID=uid-shop-${name}`);
    const added = await invokePlugin(env, { cniVersion: "1.0.0", name: "primary", ...entry, prevResult: { cniVersion: "1.0.0" } });
    return { netns, added };
  };

  beforeAll(async () => {
    await api.start();
    api.addNode({ metadata: { name: node } });
    writeFileSync(host.path("10-primary.conflist"), JSON.stringify(net.primaryConflist("primary")));
    const args = ["--template", agentTemplate(net.stateDir), "--node", node, "--state-dir", net.stateDir, "--on-stop", "keep"];
    await host.startWithApi(api, args, { POD_NAMESPACE: "meshcni" });
    await host.waitFor(async () => (await host.readyz()).status === 200, 10_000);
    entry = (host.json("10-primary.conflist").plugins ?? []).at(-1) as Record<string, unknown>;
    // Stopped, keeping its entry and kubeconfig: the socket is the other's alone while the plugin asks.
    await host.stop();
    mkdirSync(join(net.stateDir, "agent"), { recursive: true });
  }, 30_000);

  afterEach(async () => {
    const ending = listener && new Promise((resolve) => listener!.once("exit", resolve));
    listener?.kill("SIGKILL");
    await ending;
    listener = undefined;
  });

  afterAll(async () => {
    await host.cleanup();
    await net.cleanup();
    await api.stop();
    rmSync(canary, { force: true });
  });

  it.each([
    ["says it applied the redirect", { applied: { result: { cniVersion: "1.0.0" } } }],
    ["refuses every pod", { refused: { code: 7, msg: "refused by the listener", details: "" } }],
    [
      "decides with a log file of its choosing",
      {
        decided: {
          result: { cniVersion: "1.0.0" },
          pod: { namespace: "shop", name: "x", uid: "u" },
          plans: [],
          settings: { stateDir: "/", mode: "nft", wait: false, simulate: false, logLevel: "debug", logFile: canary },
        },
      },
    ],
  ])("is sent nothing and believed in nothing when it %s: the plugin redirects the pod its own way", async (what, answer) => {
    await listenAsOther(answer);
    const name = `pod-${what.split(" ")[0]}`;
    const { netns, added } = await addPod(name);
    expect(added.exitCode, added.stdout).toBe(0);
    expect(await natRules(netns, "nft")).toContain(":PROXY_INIT_REDIRECT - [0:0]");
    expect(added.stderr).toMatch(
      /asking the API server instead of the agent.*the listener is not the node's agent: it \(pid \d+\) lacks CAP_NET_ADMIN or CAP_SYS_ADMIN/,
    );
    // It was connected to, and got no byte and no descriptor.
    expect(connections().length).toBeGreaterThan(0);
    for (const [bytes, descriptors] of connections()) expect([bytes, descriptors]).toEqual([0, 0]);
    expect(existsSync(canary)).toBe(false);
  });

  it("is replaced by the agent, which takes its socket back within a second while it runs; the plugin then asks the agent", async () => {
    const answering = () => host.logs.filter((line) => line.msg === "answering the plugin").length;
    const before = answering();
    await host.startWithApi(api, ["--template", agentTemplate(net.stateDir), "--node", node, "--state-dir", net.stateDir], {
      POD_NAMESPACE: "meshcni",
    });
    await host.waitFor(() => answering() > before, 10_000);
    await listenAsOther({ applied: {} });
    await host.waitFor(() => host.logs.some((line) => line.msg === "the plugin's socket was replaced: took it back"), 5000);
    expect(host.logs.find((line) => line.msg === "the plugin's socket was replaced: took it back")?.found).toBe("another socket");
    const heardBefore = connections().length;
    const { netns, added } = await addPod("after");
    expect(added.exitCode, added.stdout).toBe(0);
    expect(added.stderr).not.toContain("asking the API server instead of the agent");
    expect(await natRules(netns, "nft")).toContain(":PROXY_INIT_REDIRECT - [0:0]");
    expect(connections().length).toBe(heardBefore);
    unlinkSync(heard);
  });
});
