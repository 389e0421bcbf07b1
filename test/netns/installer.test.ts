import { writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentHarness } from "../kit/agent.js";
import { FakeApiServer } from "../kit/api-server.js";
import { agentTemplate, isRoot, podArgs } from "../kit/common.js";
import { natRules, TestNetwork } from "../kit/network.js";

/**
 * The agent on this host's real paths: it installs the binary and kubeconfig and chains
 * into a bridge conflist; after each re-chain, real cnitool ADDs a meshed pod through
 * the resulting conflist and the rules are there.
 */
describe.skipIf(!isRoot)("meshcni install feeding real cnitool", () => {
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
