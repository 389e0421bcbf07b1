import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { AgentHarness } from "../kit/agent/harness.js";
import { FakeApiServer, podObject } from "../kit/api/server.js";
import { agentTemplate, podArgs } from "../kit/common.js";
import { TestNetwork } from "../kit/netns/network.js";
import { natRules } from "../kit/netns/plugin-process.js";
import { describeAsRoot } from "../kit/root-suites.js";

/**
 * The agent on this host's real paths: it installs the binary and kubeconfig and chains
 * into a bridge conflist; after each re-chain, real cnitool ADDs a meshed pod through
 * the resulting conflist and the rules are there.
 */
describeAsRoot("meshcni install feeding real cnitool", () => {
  const api = new FakeApiServer();
  const net = new TestNetwork(30);
  let host: AgentHarness;
  const pods: Array<{ netns: string; network: string; args: string }> = [];

  beforeAll(async () => {
    host = new AgentHarness({ onHost: true });
    await api.start();
    writeFileSync(host.path("10-primary.conflist"), JSON.stringify(net.primaryConflist("primary")));
    await host.startWithApi(api, ["--template", agentTemplate(net.stateDir)]);
    await host.waitFor(() => host.types("10-primary.conflist").at(-1) === "meshcni");
  });

  afterAll(async () => {
    for (const pod of pods) await net.cnitool("del", pod.network, pod.netns, pod.args, { conf: host.netDir, bin: host.binDir });
    expect(await host.stop()).toBe(0);
    await host.cleanup();
    await net.cleanup();
    await api.stop();
  });

  async function addMeshedPod(name: string, network: string): Promise<string[]> {
    const { netns } = await net.startPod(api, { namespace: "demo", name, network, dirs: { conf: host.netDir, bin: host.binDir } });
    pods.push({ netns, network, args: podArgs("demo", name) });
    return natRules(netns, "nft");
  }

  it("writes the rules through the conflist it chained at start", async () => {
    expect(await addMeshedPod("first", "primary")).toContain(":PROXY_INIT_REDIRECT - [0:0]");
  });

  it("writes them again after the primary CNI rewrote its file in place", async () => {
    host.writeInPlace("10-primary.conflist", JSON.stringify(net.primaryConflist("primary")));
    await host.waitFor(() => host.types("10-primary.conflist").at(-1) === "meshcni");
    expect(await addMeshedPod("in-place", "primary")).toContain(":PROXY_INIT_REDIRECT - [0:0]");
  });

  it("writes them again after the primary CNI renamed a new file over it", async () => {
    host.renameOver("10-primary.conflist", JSON.stringify(net.primaryConflist("primary")));
    await host.waitFor(() => host.types("10-primary.conflist").at(-1) === "meshcni");
    expect(await addMeshedPod("renamed", "primary")).toContain(":PROXY_INIT_REDIRECT - [0:0]");
  });

  it("writes them through a new earlier-sorting config once it is the active one", async () => {
    writeFileSync(host.path("05-newcomer.conflist"), JSON.stringify(net.primaryConflist("newcomer")));
    await host.waitFor(() => host.types("05-newcomer.conflist").at(-1) === "meshcni");
    expect(await addMeshedPod("newcomer", "newcomer")).toContain(":PROXY_INIT_REDIRECT - [0:0]");
    expect(host.types("10-primary.conflist")).toEqual(["bridge"]);
  });
});

/**
 * A DaemonSet rollout stops the agent while its DaemonSet stays: meshcni stays chained,
 * so a pod started while no agent runs is redirected; deleting the DaemonSet uninstalls.
 */
describeAsRoot("meshcni install across a rollout, then an uninstall", () => {
  const api = new FakeApiServer();
  const net = new TestNetwork(31);
  const self = { POD_NAMESPACE: "meshcni", POD_NAME: "meshcni-abcde" };
  let host: AgentHarness;
  const pods: Array<{ name: string; netns: string; args: string }> = [];
  const start = () => host.startWithApi(api, ["--template", agentTemplate(net.stateDir), "--state-dir", net.stateDir], self);

  beforeAll(async () => {
    host = new AgentHarness({ onHost: true });
    await api.start();
    api.addPod(podObject("meshcni", "meshcni-abcde", { proxy: false, daemonSet: "meshcni" }));
    api.addDaemonSet("meshcni", "meshcni");
    writeFileSync(host.path("10-primary.conflist"), JSON.stringify(net.primaryConflist("primary")));
    await start();
    await host.waitFor(async () => (await host.readyz()).status === 200);
  });

  afterAll(async () => {
    for (const pod of pods) await net.cnitool("del", "primary", pod.netns, pod.args, { conf: host.netDir, bin: host.binDir });
    await host.cleanup();
    await net.cleanup();
    await api.stop();
  });

  async function addMeshedPod(name: string): Promise<string[]> {
    const { netns } = await net.startPod(api, {
      namespace: "demo",
      name,
      network: "primary",
      dirs: { conf: host.netDir, bin: host.binDir },
    });
    pods.push({ name, netns, args: podArgs("demo", name) });
    return natRules(netns, "nft");
  }

  it("keeps meshcni chained while the agent restarts: a pod started in between is redirected", async () => {
    expect(await host.stop()).toBe(0);
    expect(host.types("10-primary.conflist").at(-1)).toBe("meshcni");
    expect(await addMeshedPod("between")).toContain(":PROXY_INIT_REDIRECT - [0:0]");
    await start();
    await host.waitFor(async () => (await host.readyz()).status === 200);
    expect(await addMeshedPod("after")).toContain(":PROXY_INIT_REDIRECT - [0:0]");
  });

  it("uninstalls once the DaemonSet is deleted: entry, kubeconfig, binary, socket, records and locks gone; running pods named, and still DEL", async () => {
    expect(readdirSync(join(net.stateDir, "attachments")).length).toBe(pods.length);
    api.daemonSets.clear();
    expect(await host.stop()).toBe(0);
    expect(host.types("10-primary.conflist")).toEqual(["bridge"]);
    expect(readdirSync(host.netDir)).toEqual(["10-primary.conflist"]);
    expect(readdirSync(host.binDir)).toEqual([]);
    expect(existsSync(net.stateDir)).toBe(false);
    const running = host.logs.find((line) => line.msg === "pods still running keep their redirect until they end");
    expect(running?.pods).toEqual(pods.map((pod) => `demo/${pod.name}`).sort());
    // Their redirect stays: their proxies still run.
    for (const pod of pods) expect(await natRules(pod.netns, "nft")).toContain(":PROXY_INIT_REDIRECT - [0:0]");
    for (const pod of pods.splice(0))
      expect((await net.cnitool("del", "primary", pod.netns, pod.args, { conf: host.netDir, bin: host.binDir })).exitCode).toBe(0);
  });
});
