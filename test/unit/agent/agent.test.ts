import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { NodeAgent } from "../../../src/agent/agent.js";
import { type AgentMetrics, createAgentMetrics } from "../../../src/agent/metrics.js";
import { parseAgentOptions } from "../../../src/agent/options.js";
import { AgentHarness } from "../../kit/agent/harness.js";
import { conflist } from "../../kit/agent/host.js";
import { connectionsOf } from "../../kit/api/connections.js";
import { FakeApiServer } from "../../kit/api/server.js";
import { until } from "../../kit/common.js";
import { type LogEntry, memoryLogger } from "../../kit/memory-logger.js";

const calico = conflist("k8s-pod-network", [{ type: "calico" }, { type: "portmap" }]);

/**
 * The agent's main loop in this process, against a host in temp dirs and the in-test API
 * server: what `meshcni install` does, without the binary or a node (no sweeps, no socket).
 */
describe("the agent's main loop", () => {
  let host: AgentHarness;
  let api: FakeApiServer;
  let logs: LogEntry[];
  let metrics: AgentMetrics;
  let agent: NodeAgent | undefined;

  const start = async (extra: string[] = []) => {
    const source = join(host.root, "meshcni-source");
    writeFileSync(source, "#!/bin/sh\n");
    chmodSync(source, 0o755);
    const env = { KUBERNETES_SERVICE_HOST: "127.0.0.1", KUBERNETES_SERVICE_PORT: String(api.port) };
    const options = parseAgentOptions(host.args(["--listen", "", "--resync-seconds", "60", ...extra]), env, source);
    agent = new NodeAgent(options, memoryLogger(logs), metrics);
    await agent.start();
    return agent;
  };
  const value = async (name: string, labels: Record<string, string> = {}) =>
    (await metrics.registry.getSingleMetric(name)!.get()).values.find((sample) =>
      Object.entries(labels).every(([key, label]) => sample.labels[key] === label),
    )?.value;
  const logged = (message: string) => logs.some((entry) => entry.message === message);

  beforeEach(async () => {
    host = new AgentHarness();
    api = await new FakeApiServer().start();
    host.rotateToken(api.agentToken, api.caPem);
    logs = [];
    metrics = createAgentMetrics();
  });

  afterEach(async () => {
    await agent?.stop();
    agent = undefined;
    await api.stop();
    await host.cleanup();
  });

  it("installs the binary, chains meshcni last, writes the plugin's kubeconfig with a minted token, and becomes ready", async () => {
    writeFileSync(host.path("10-calico.conflist"), calico);
    const running = await start(["--on-stop", "keep"]);
    await until(() => running.readiness.ready, 5000);
    expect(readFileSync(join(host.binDir, "meshcni"), "utf8")).toBe("#!/bin/sh\n");
    expect(host.types("10-calico.conflist")).toEqual(["calico", "portmap", "meshcni"]);
    expect(api.minted.get(host.pluginToken())?.serviceAccount).toBe("meshcni/meshcni-plugin");
    expect(running.readiness).toEqual({
      ready: true,
      reasons: [],
      missingPlugins: [],
      active: "10-calico.conflist",
      chainedBy: "in 10-calico.conflist",
    });
    expect(await value("meshcni_ready")).toBe(1);
    expect(logged("binary installed") && logged("chained meshcni") && logged("kubeconfig written")).toBe(true);
  });

  it("holds its watches and makes its requests on one HTTP/2 connection, under Node as the binary does under Bun", async () => {
    writeFileSync(host.path("10-calico.conflist"), calico);
    await start(["--node", "n1"]);
    await until(() => connectionsOf(api.requests, "agent").watched.length === 3, 5000);
    expect(connectionsOf(api.requests, "agent")).toEqual({
      connections: [expect.stringMatching(/^HTTP\/2 #/)],
      watched: ["/api/v1/namespaces/default/services", "/api/v1/nodes", "/api/v1/pods"],
    });
  });

  it("puts the entry back when the primary CNI rewrites its config in place, counting the re-chain and its latency", async () => {
    writeFileSync(host.path("10-calico.conflist"), calico);
    const running = await start(["--on-stop", "keep"]);
    await until(() => running.readiness.ready, 5000);
    host.writeInPlace("10-calico.conflist", calico);
    await until(() => host.types("10-calico.conflist").at(-1) === "meshcni", 5000);
    await until(async () => (await value("meshcni_rechains_total", { cause: "entry_removed" })) === 1, 2000);
    expect((await metrics.registry.getSingleMetric("meshcni_rechain_duration_seconds")!.get()).values).toContainEqual(
      expect.objectContaining({ metricName: "meshcni_rechain_duration_seconds_count", value: 1 }),
    );
    expect(logs.find((entry) => entry.message === "re-chained meshcni")?.fields).toMatchObject({ cause: "entry_removed" });
  });

  it("is not ready while the active config stays broken, saying why once; ready again once it is fixed", async () => {
    writeFileSync(host.path("10-calico.conflist"), "{ not json");
    const running = await start(["--on-stop", "keep"]);
    await until(() => logs.some((entry) => entry.level === "warn" && entry.message.includes("is not a valid CNI config")), 5000);
    expect(running.readiness.ready).toBe(false);
    expect(running.readiness.reasons.join()).toContain("10-calico.conflist");
    expect(await value("meshcni_ready")).toBe(0);
    host.renameOver("10-calico.conflist", calico);
    await until(() => running.readiness.ready, 5000);
    expect(logs.filter((entry) => entry.message.includes("is not a valid CNI config"))).toHaveLength(1);
    expect(logs.some((entry) => entry.message === "resolved" && entry.fields?.topic === "netdir")).toBe(true);
  });

  it("keeps everything at a stop that is no uninstall; takes every trace out at one that is", async () => {
    writeFileSync(host.path("10-calico.conflist"), calico);
    const kept = await start(["--on-stop", "keep"]);
    await until(() => kept.readiness.ready, 5000);
    await kept.stop();
    expect(host.types("10-calico.conflist").at(-1)).toBe("meshcni");
    expect(logs.find((entry) => entry.message === "stopping; meshcni stays installed and chained")?.fields).toEqual({
      why: "--on-stop keep",
    });
    mkdirSync(host.stateDir, { recursive: true });
    const removed = await start(["--on-stop", "uninstall"]);
    await until(() => removed.readiness.ready, 5000);
    await removed.stop();
    agent = undefined;
    expect(host.types("10-calico.conflist")).toEqual(["calico", "portmap"]);
    expect([existsSync(join(host.binDir, "meshcni")), existsSync(host.kubeconfigPath), existsSync(host.stateDir)]).toEqual([
      false,
      false,
      false,
    ]);
    expect(logs.find((entry) => entry.message === "uninstalled")?.fields).toEqual({ why: "--on-stop uninstall" });
  });
});
