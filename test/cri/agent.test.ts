import { readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, expect, it } from "vitest";
import { AgentHarness } from "../kit/agent/harness.js";
import { FakeApiServer, podObject } from "../kit/api/server.js";
import { agentTemplate, sleep } from "../kit/common.js";
import { ContainerdNode, type Sandbox } from "../kit/cri/containerd.js";
import { TestNetwork } from "../kit/netns/network.js";
import { natRules } from "../kit/netns/plugin-process.js";
import { meshcniBinary } from "../kit/paths.js";
import { describeAsRoot } from "../kit/root-suites.js";

const node = "cri-node";

/** The agent and containerd sharing a host's CNI dirs, as on a node. */
function scenario(subnet: number) {
  const api = new FakeApiServer();
  const net = new TestNetwork(subnet);
  const host = new AgentHarness({ onHost: true });
  const runtime = new ContainerdNode({ confDir: host.netDir, binDir: host.binDir });
  let pods = 0;
  const primary = () => JSON.stringify(net.primaryConflist("primary"), null, 2);
  /** A meshed pod in the API, then its sandbox; the API then shows it running with its IP, as kubelet reports it. */
  const runMeshedPod = async (): Promise<Sandbox> => {
    const name = `pod-${pods++}`;
    api.addPod(podObject("shop", name, { proxy: "container", owned: true }));
    const sandbox = await runtime.runPod(runtime.sandboxConfig("shop", name));
    api.addPod(podObject("shop", name, { proxy: "container", owned: true, nodeName: node, podIP: sandbox.ip }));
    return sandbox;
  };
  const redirected = async (sandbox: Sandbox) => (await natRules(sandbox.podNetns, "nft")).includes(":PROXY_INIT_REDIRECT - [0:0]");
  const teardown = async () => {
    await runtime.stop();
    await host.cleanup();
    await net.cleanup();
    await api.stop();
  };
  return { api, net, host, runtime, primary, runMeshedPod, redirected, teardown };
}

describeAsRoot("meshcni install keeping containerd's CNI config", () => {
  const s = scenario(71);
  beforeAll(async () => {
    await s.api.start();
    writeFileSync(s.host.path("10-primary.conflist"), s.primary());
    await s.host.startWithApi(s.api, ["--template", agentTemplate(s.net.stateDir), "--state-dir", s.net.stateDir]);
    await s.host.waitFor(async () => (await s.host.readyz()).status === 200);
    await s.runtime.start();
  }, 60_000);
  afterAll(() => s.teardown());

  /**
   * Rewrites the primary's config as `write` does, then starts sandboxes until one is
   * redirected: how long that took, how many started unredirected in between (containerd
   * still on the config without meshcni), and every sandbox that failed to start, with why.
   */
  async function untilRedirected(write: () => void): Promise<{ ms: number; unredirected: number; failed: string[] }> {
    const written = performance.now();
    write();
    let unredirected = 0;
    const failed: string[] = [];
    for (;;) {
      const sandbox = await s.runMeshedPod().catch((error: unknown) => void failed.push(String((error as Error).message ?? error)));
      if (sandbox && (await s.redirected(sandbox))) return { ms: performance.now() - written, unredirected, failed };
      if (sandbox) unredirected++;
      if (performance.now() - written > 15_000)
        throw new Error(
          `no redirected sandbox 15 s after the rewrite (${failed.length} failed: ${failed.slice(0, 3).join("; ")}); containerd:\n${s.runtime.log.slice(-3000)}`,
        );
    }
  }

  it("redirects the sandboxes containerd starts through the config the agent chained", async () => {
    expect(await s.redirected(await s.runMeshedPod())).toBe(true);
  });

  it.each([
    ["Calico's in-place rewrite", () => s.host.writeInPlace("10-primary.conflist", s.primary())],
    ["the AWS VPC CNI's rename over", () => s.host.renameOver("10-primary.conflist", s.primary())],
  ])("after %s, containerd reloads: no sandbox fails, and from the first redirected one every next one is", async (title, write) => {
    const { ms, unredirected, failed } = await untilRedirected(write);
    process.stdout.write(
      `\n${title} -> first redirected sandbox: ${Math.round(ms)} ms (${unredirected} started unredirected in between)\n`,
    );
    expect(failed).toEqual([]);
    expect(s.host.types("10-primary.conflist").at(-1)).toBe("meshcni");
    // containerd does not go back to the config without meshcni.
    for (let i = 0; i < 3; i++) expect(await s.redirected(await s.runMeshedPod())).toBe(true);
  });
});

describeAsRoot("a meshed sandbox started before the agent chained meshcni (the node-start race)", () => {
  const s = scenario(72);
  let early: Sandbox;
  beforeAll(async () => {
    await s.api.start();
    s.api.addPod(podObject("meshcni", "agent-self", { proxy: false, nodeName: node, daemonSet: "meshcni" }));
    writeFileSync(s.host.path("10-primary.conflist"), s.primary());
    await s.runtime.start();
    early = await s.runMeshedPod();
  }, 60_000);
  afterAll(() => s.teardown());

  it("is found by the agent's first sweep among containerd's netns and redirected in place", async () => {
    expect(await s.redirected(early)).toBe(false);
    const started = performance.now();
    await s.host.startWithApi(
      s.api,
      [
        "--template",
        agentTemplate(s.net.stateDir),
        "--state-dir",
        s.net.stateDir,
        "--node",
        node,
        "--netns-dir",
        dirname(early.netns),
        "--cri-socket",
        s.runtime.socket,
      ],
      { POD_NAMESPACE: "meshcni", POD_NAME: "agent-self" },
    );
    while (!(await s.redirected(early))) {
      if (performance.now() - started > 15_000) throw new Error(`not redirected; agent:\n${s.host.stderr.join("\n")}`);
      await sleep(10);
    }
    process.stdout.write(
      `\nnode-start race: agent start -> early sandbox redirected in place: ${Math.round(performance.now() - started)} ms\n`,
    );
    await s.host.waitFor(() => s.api.events.some((event) => event.reason === "MeshRedirectMissing"), 5000);
    expect((await s.runtime.client.podSandboxStatus(early.id)).status.state).toBe("SANDBOX_READY");
  });

  it("is placed by meshcni audit through containerd's CRI (ListPodSandbox by the pod's UID, its verbose status), not by its IP", async () => {
    const audit = (criSocket: string) =>
      execa(
        meshcniBinary,
        [
          "audit",
          "--node",
          node,
          "--kubeconfig",
          s.api.writeKubeconfig(),
          "--state-dir",
          s.net.stateDir,
          "--netns-dir",
          dirname(early.netns),
        ].concat(["--net-dir", s.host.netDir, "--cri-socket", criSocket, "--output", "json"]),
        { reject: false },
      );
    // The repair's record says where the netns is: without it, only the runtime can.
    for (const name of readdirSync(join(s.net.stateDir, "attachments"))) rmSync(join(s.net.stateDir, "attachments", name));
    const asked = await audit(s.runtime.socket);
    const [pod] = JSON.parse(asked.stdout).pods;
    expect(pod, asked.stderr).toMatchObject({ name: "pod-0", status: "adopted" });
    const unasked = JSON.parse((await audit("")).stdout).pods[0];
    expect(unasked).toMatchObject({ status: "unknown", details: [expect.stringContaining(`only its IP points to netns ${early.netns}`)] });
  });
});
