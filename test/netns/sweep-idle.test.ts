import { writeFileSync } from "node:fs";
import { execa } from "execa";
import { afterAll, beforeAll, expect, it } from "vitest";
import { AgentHarness } from "../kit/agent/harness.js";
import { FakeApiServer, podObject } from "../kit/api/server.js";
import { agentTemplate, deleteLoopbackRule, inNetnsCommand, loopbackRule, until } from "../kit/common.js";
import { TestNetwork } from "../kit/netns/network.js";
import { natRules } from "../kit/netns/plugin-process.js";
import { describeAsRoot } from "../kit/root-suites.js";

const node = "node-i";

/**
 * An idle node (every meshed pod protected, nothing changing): the agent's full sweeps start
 * no process, its writer telling it each pod's netns is the same at the same nf_tables
 * generation; a change to a pod's rules by anyone (iptables-nft, or iptables-legacy, outside
 * nf_tables) has the next one run its process, which finds it.
 */
describeAsRoot("the agent's full sweeps on an idle node", () => {
  const api = new FakeApiServer();
  const net = new TestNetwork(57);
  const host = new AgentHarness({ onHost: true });
  const pods: Record<string, string> = {};
  const metric = async (name: string) => (await host.metric(name)) ?? 0;
  const events = (name: string) => api.events.filter((event) => (event.involvedObject as { name: string }).name === name);
  /** Waits for `count` more full sweeps answered without their process. */
  const unchangedSweeps = async (count: number) => {
    const from = await metric("meshcni_audit_unchanged_total");
    // Scraped four times a second: each scrape renders every metric, which a tighter loop would make the agent's main work.
    await until(async () => (await metric("meshcni_audit_unchanged_total")) >= from + count, 15_000, 250);
  };

  beforeAll(async () => {
    await api.start();
    api.addNode({ metadata: { name: node } });
    writeFileSync(host.path("10-primary.conflist"), JSON.stringify(net.primaryConflist("primary")));
    // Its own pod unmeshed, as the DaemonSet runs it.
    api.addPod(podObject("meshcni", "agent-self", { proxy: false, nodeName: node, podIP: "10.251.0.250", daemonSet: "meshcni" }));
    const template = agentTemplate(net.stateDir);
    api.setConfigMap("meshcni", "meshcni-config", { cni_network_config: template });
    await host.startWithApi(
      api,
      ["--template", template, "--node", node, "--state-dir", net.stateDir, "--audit-seconds", "1", "--cri-socket", await net.criSocket()],
      { POD_NAMESPACE: "meshcni", POD_NAME: "agent-self", MESHCNI_CONFIG_MAP: "meshcni-config" },
    );
    // Chained first: each pod's ADD is meshcni's.
    await host.waitFor(async () => (await host.readyz()).status === 200, 20_000);
    for (const name of ["web", "db", "cache"])
      pods[name] = (
        await net.startPod(api, {
          namespace: "shop",
          name,
          network: "primary",
          node,
          options: { owned: true },
          dirs: { conf: host.netDir, bin: host.binDir },
        })
      ).netns;
  });
  afterAll(async () => {
    await host.cleanup();
    await net.cleanup();
    await api.stop();
  });

  it("starts no sweep process while nothing moved: each full sweep is the writer's look", async () => {
    await unchangedSweeps(3);
    expect(await metric('meshcni_meshed_pods{status="protected"}')).toBe(3);
    // Each answered one counts as an audit too.
    const [audits, unchanged] = [await metric("meshcni_audit_duration_seconds_count"), await metric("meshcni_audit_unchanged_total")];
    await unchangedSweeps(2);
    expect((await metric("meshcni_audit_duration_seconds_count")) - audits).toBe(
      (await metric("meshcni_audit_unchanged_total")) - unchanged,
    );
    // No sweep process among the agent's children (its writers are).
    const children = await execa("pgrep", ["-a", "-P", String(host.pid)], { reject: false });
    expect(String(children.stdout)).not.toContain(" sweep");
    for (const name of Object.keys(pods)) expect(events(name)).toEqual([]);
  });

  it("a rule deleted with iptables-nft: the next full sweep runs its process, which restores it", async () => {
    await deleteLoopbackRule(pods.web!);
    await host.waitFor(() => events("web").length === 1, 10_000);
    expect(events("web")[0]).toMatchObject({ reason: "MeshRedirectDrifted" });
    expect(events("web")[0]!.message).toContain(`missing rule: ${loopbackRule}`);
    expect(await natRules(pods.web!, "nft")).toContain(
      '-A PROXY_INIT_OUTPUT -o lo -m comment --comment "proxy-init/ignore-loopback" -j RETURN',
    );
    // Clean again: the sweeps that follow are looks once more.
    await unchangedSweeps(2);
  });

  it("a rule added with iptables-legacy (outside nf_tables, its generation unmoved): the next full sweep runs its process, which finds it", async () => {
    const [command, ...prefix] = inNetnsCommand(pods.db!);
    await execa(command!, [...prefix, "iptables-legacy", "-t", "raw", "-A", "OUTPUT", "-p", "tcp", "-j", "CT", "--notrack"]);
    await host.waitFor(() => events("db").some((event) => String(event.message).includes("untracked TCP")), 10_000);
    expect(events("db").at(-1)).toMatchObject({ reason: "MeshRedirectDrifted", type: "Warning" });
  });
});
