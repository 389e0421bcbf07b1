import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { NodeAgent } from "../../../src/agent/agent.js";
import { type AgentMetrics, createAgentMetrics } from "../../../src/agent/metrics.js";
import { parseAgentOptions } from "../../../src/agent/options.js";
import { AgentHarness } from "../../kit/agent/harness.js";
import { conflist } from "../../kit/agent/host.js";
import { FakeApiServer } from "../../kit/api/server.js";
import { until } from "../../kit/common.js";
import { FakeCriRuntime } from "../../kit/cri/fake-runtime.js";
import { libcniLoaded } from "../../kit/cri/libcni-load.js";
import { type LogEntry, memoryLogger } from "../../kit/memory-logger.js";

const calico = conflist("k8s-pod-network", [{ type: "calico" }, { type: "portmap" }]);
const dropIn = "k8s-pod-network/zz-meshcni.conf";

/**
 * The agent's chain mode against a runtime that says what it loaded (its CRI Status): by
 * drop-in where the runtime loads drop-ins, the primary's file never written; by the entry
 * in the config where it does not, or says nothing. The real containerd's reload is proven
 * in test/cluster/install.test.ts.
 */
describe("the agent chaining meshcni by drop-in", () => {
  let host: AgentHarness;
  let api: FakeApiServer;
  let runtime: FakeCriRuntime;
  let logs: LogEntry[];
  let metrics: AgentMetrics;
  let agent: NodeAgent | undefined;

  const start = async (loadsDropIns: boolean | undefined, extra: string[] = []) => {
    runtime.cniConfig = loadsDropIns === undefined ? undefined : () => libcniLoaded(host.netDir, loadsDropIns);
    const source = join(host.root, "meshcni-source");
    writeFileSync(source, "#!/bin/sh\n");
    chmodSync(source, 0o755);
    const env = { KUBERNETES_SERVICE_HOST: "127.0.0.1", KUBERNETES_SERVICE_PORT: String(api.port) };
    const args = ["--listen", "", "--resync-seconds", "60", "--on-stop", "keep", "--cri-socket", "/run/cri.sock", ...extra];
    const options = parseAgentOptions(host.args(args), env, source);
    agent = new NodeAgent(options, memoryLogger(logs), metrics);
    await agent.start();
    await until(() => agent!.readiness.ready, 8000);
    return agent;
  };
  const mode = async () =>
    (await metrics.registry.getSingleMetric("meshcni_chain_mode")!.get()).values.find((sample) => sample.value === 1)?.labels.mode;
  const dropInText = () => JSON.parse(readFileSync(join(host.netDir, dropIn), "utf8")) as Record<string, unknown>;

  beforeEach(async () => {
    host = new AgentHarness();
    api = await new FakeApiServer().start();
    host.rotateToken(api.agentToken, api.caPem);
    mkdirSync(join(host.hostRoot, "run"), { recursive: true });
    runtime = new FakeCriRuntime(join(host.hostRoot, "run/cri.sock"));
    await runtime.start();
    logs = [];
    metrics = createAgentMetrics();
  });

  afterEach(async () => {
    await agent?.stop();
    agent = undefined;
    await runtime.stop();
    await api.stop();
    await host.cleanup();
  });

  it("proves the runtime loads drop-ins with a probe, then chains by its own drop-in: the primary's file stays byte for byte", async () => {
    writeFileSync(host.path("10-calico.conflist"), calico);
    const running = await start(true);
    expect(readFileSync(host.path("10-calico.conflist"), "utf8")).toBe(calico);
    expect(dropInText()).toMatchObject({ type: "meshcni" });
    expect(dropInText()).not.toHaveProperty("probe");
    expect(running.readiness).toMatchObject({ ready: true, chainedBy: `by its drop-in ${dropIn}`, active: "10-calico.conflist" });
    expect(await mode()).toBe("dropin");
    const said = logs.map((entry) => entry.message);
    expect(said.indexOf("wrote meshcni's probe, to see whether the container runtime loads drop-ins")).toBeLessThan(
      said.indexOf("chained meshcni by its drop-in"),
    );
    expect(said).toContain("the container runtime loads drop-ins: chaining meshcni by its drop-in");
    // The primary rewrites its file: nothing for meshcni to write.
    const chained = said.filter((message) => message.includes("chained meshcni")).length;
    host.writeInPlace("10-calico.conflist", calico);
    await until(() => running.readiness.ready, 2000);
    expect(logs.filter((entry) => entry.message.includes("chained meshcni")).length).toBe(chained);
    expect(readFileSync(host.path("10-calico.conflist"), "utf8")).toBe(calico);
  });

  it("moves an older meshcni's conflist entry into its drop-in: the entry leaves the conflist only once the drop-in holds it", async () => {
    writeFileSync(host.path("10-calico.conflist"), conflist("k8s-pod-network", [{ type: "calico" }, { type: "meshcni" }]));
    await start(true);
    expect(host.types("10-calico.conflist")).toEqual(["calico"]);
    expect(dropInText()).toMatchObject({ type: "meshcni" });
    // The entry the runtime loaded from the conflist proves nothing of drop-ins: the probe went first.
    const said = logs.map((entry) => entry.message);
    expect(said.indexOf("the container runtime loads drop-ins: chaining meshcni by its drop-in")).toBeGreaterThan(-1);
    expect(said.indexOf("the container runtime loads drop-ins: chaining meshcni by its drop-in")).toBeLessThan(
      said.indexOf("removed meshcni's entry"),
    );
    expect(logs.find((entry) => entry.message === "removed meshcni's entry")?.fields?.why).toContain("chained by its drop-in");
  });

  it("restarted where its drop-in is loaded, keeps it: no probe, nothing written", async () => {
    writeFileSync(host.path("10-calico.conflist"), calico);
    await (await start(true)).stop();
    agent = undefined;
    const written = readFileSync(join(host.netDir, dropIn), "utf8");
    logs.length = 0;
    const restarted = await start(true);
    expect(restarted.readiness.chainedBy).toBe(`by its drop-in ${dropIn}`);
    expect(
      logs.map((entry) => entry.message).filter((message) => message.includes("probe") || message.includes("chained meshcni")),
    ).toEqual([]);
    expect(readFileSync(join(host.netDir, dropIn), "utf8")).toBe(written);
  });

  it("falls back to the entry in the config where the runtime does not load drop-ins (containerd 1.7), the probe removed", async () => {
    writeFileSync(host.path("10-calico.conflist"), calico);
    const running = await start(false);
    expect(host.types("10-calico.conflist")).toEqual(["calico", "portmap", "meshcni"]);
    expect(existsSync(join(host.netDir, "k8s-pod-network"))).toBe(false);
    expect(running.readiness.chainedBy).toBe("in 10-calico.conflist");
    expect(await mode()).toBe("conflist");
    expect(logs.find((entry) => entry.message === "chaining meshcni in the active config instead of a drop-in")?.fields?.why).toContain(
      "did not load meshcni's probe",
    );
  }, 15_000);

  it("chains by the entry at once where the runtime does not say what it loaded (CRI-O), or the config forbids drop-ins", async () => {
    writeFileSync(host.path("10-calico.conflist"), calico);
    await start(undefined);
    expect(host.types("10-calico.conflist").at(-1)).toBe("meshcni");
    expect(logs.find((entry) => entry.message.startsWith("chain mode"))?.fields?.why).toContain('has no "cniconfig"');
    await agent!.stop();
    agent = undefined;
    const forbidding = conflist("k8s-pod-network", [{ type: "calico" }]).replace('"plugins"', '"loadOnlyInlinedPlugins": true, "plugins"');
    writeFileSync(host.path("10-calico.conflist"), forbidding);
    await start(true);
    expect(host.types("10-calico.conflist").at(-1)).toBe("meshcni");
    expect(await mode()).toBe("conflist");
  }, 15_000);

  it("follows a new network sorted first (Cilium's), takes its drop-in back out of the old network's dir, and removes it all at the uninstall", async () => {
    writeFileSync(host.path("10-calico.conflist"), calico);
    const running = await start(true);
    const cilium = conflist("cilium", [{ type: "cilium-cni" }]);
    writeFileSync(host.path("05-cilium.conflist"), cilium);
    await until(() => existsSync(join(host.netDir, "cilium/zz-meshcni.conf")) && !existsSync(join(host.netDir, "k8s-pod-network")), 5000);
    await until(() => running.readiness.chainedBy === "by its drop-in cilium/zz-meshcni.conf", 5000);
    expect(readFileSync(host.path("05-cilium.conflist"), "utf8")).toBe(cilium);
    await running.stop();
    agent = undefined;
    const removed = await start(true, ["--on-stop", "uninstall"]);
    await removed.stop();
    agent = undefined;
    expect(readdirSync(host.netDir).sort()).toEqual(["05-cilium.conflist", "10-calico.conflist"]);
    expect(readFileSync(host.path("10-calico.conflist"), "utf8")).toBe(calico);
  }, 15_000);
});
