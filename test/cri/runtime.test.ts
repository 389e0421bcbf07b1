import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, expect, it } from "vitest";
import { FakeApiServer, podObject } from "../kit/api/server.js";
import { ContainerdNode } from "../kit/cri/containerd.js";
import { TestNetwork } from "../kit/netns/network.js";
import { natRules } from "../kit/netns/plugin-process.js";
import { describeAsRoot } from "../kit/root-suites.js";

/** meshcni's log lines (log_file), by verb and container. */
function pluginLog(file: string): Array<{ command: string; containerId?: string; msg: string; level: string }> {
  return existsSync(file)
    ? readFileSync(file, "utf8")
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line))
    : [];
}

/**
 * containerd 1.6's CRI drives meshcni as kubelet would have it: RunPodSandbox makes the
 * netns and calls bridge + host-local + meshcni; StopPodSandbox and RemovePodSandbox call
 * DEL twice. The redirect is read in the pause process's own netns and proven with TCP.
 */
describeAsRoot("meshcni under containerd's CRI", () => {
  const api = new FakeApiServer();
  const net = new TestNetwork(70);
  const logFile = () => join(net.dir, "meshcni.log");
  let node: ContainerdNode;
  let client = "";

  beforeAll(async () => {
    await api.start();
    const kubeconfig = api.writeKubeconfig();
    api.addPod(podObject("demo", "web", { proxy: "container" }));
    api.addPod(podObject("demo", "batch"));
    api.addPod(podObject("demo", "torn", { proxy: "container" }));
    api.addPod(podObject("demo", "down", { proxy: "container" }));
    net.writeConflist("k8s", { log_file: logFile(), kubernetes: { kubeconfig, timeout_seconds: 2 }, linkerd: { "iptables-mode": "nft" } });
    client = await net.addNetns("client");
    expect((await net.cnitool("add", "k8s", client)).exitCode).toBe(0);
    node = new ContainerdNode({ confDir: net.confDir, binDir: net.binDir });
    await node.start();
  }, 60_000);

  afterAll(async () => {
    await node?.stop();
    await net.cleanup();
    await api.stop();
  });

  it("redirects a meshed pod: its sandbox is ready, the rules are in the pause process's netns, TCP to its IP lands on 4143", async () => {
    const sandbox = await node.runPod(node.sandboxConfig("demo", "web"));
    expect(sandbox.ip).toMatch(/^10\.251\.70\./);
    expect(await natRules(sandbox.podNetns, "nft")).toContain(":PROXY_INIT_REDIRECT - [0:0]");
    await net.serve(sandbox.podNetns, { 4143: "proxy-inbound", 8080: "app" });
    expect(await net.connect(client, sandbox.ip, 8080)).toBe("proxy-inbound");
    const adds = pluginLog(logFile()).filter((line) => line.command === "ADD" && line.containerId === sandbox.id);
    expect(adds.map((line) => line.msg)).toContain("redirect applied");
    // Without log_file the same lines land in the runtime's own log: libcni passes the plugin's stderr through.
    expect(node.log).toContain(`"msg":"redirect applied"`);
    expect(node.log).toContain(`"containerId":"${sandbox.id}"`);
  });

  it("leaves an unmeshed pod alone", async () => {
    const sandbox = await node.runPod(node.sandboxConfig("demo", "batch"));
    expect(await natRules(sandbox.podNetns, "nft")).toEqual([]);
  });

  it("StopPodSandbox's DEL removes the rules and the record; RemovePodSandbox's second DEL, without a netns, succeeds", async () => {
    const sandbox = await node.runPod(node.sandboxConfig("demo", "torn"));
    const held = join(net.dir, "torn-netns");
    // Keep the netns past the stop to read what DEL left in it.
    writeFileSync(held, "");
    await execa("mount", ["--bind", sandbox.podNetns, held]);
    try {
      expect(readdirSync(join(net.stateDir, "attachments"))).toContain(`${sandbox.id}_eth0.json`);
      await node.removePod(sandbox.id);
      expect(await natRules(held, "nft")).toEqual([]);
    } finally {
      await execa("umount", [held]);
    }
    expect(readdirSync(join(net.stateDir, "attachments"))).not.toContain(`${sandbox.id}_eth0.json`);
    const dels = pluginLog(logFile()).filter((line) => line.command === "DEL" && line.containerId === sandbox.id);
    expect(dels.filter((line) => line.level === "error")).toEqual([]);
    expect(dels.map((line) => line.msg)).toContain("no CNI_NETNS: the netns is gone, nothing to remove");
  });

  it("fails RunPodSandbox with meshcni's message when the API cannot answer; the runtime's DEL leaves nothing", async () => {
    api.faults.set("/api/v1/namespaces/demo/pods/down", { status: 500 });
    try {
      await expect(node.runPod(node.sandboxConfig("demo", "down"))).rejects.toThrow(
        /plugin type="meshcni" failed \(add\): cannot decide the redirect for pod demo\/down: reading pod demo\/down: .*HTTP 500 from the API server/,
      );
    } finally {
      api.faults.clear();
    }
    const failedAdd = pluginLog(logFile())
      .filter((line) => line.command === "ADD" && line.level === "error")
      .at(-1);
    expect(failedAdd?.msg).toContain("pod demo/down");
    const id = failedAdd!.containerId!;
    expect(pluginLog(logFile()).some((line) => line.command === "DEL" && line.containerId === id)).toBe(true);
    expect(readdirSync(join(net.stateDir, "attachments")).filter((name) => name.startsWith(id))).toEqual([]);
  });
});
