import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { maxAnnotationTokens } from "../../src/mesh/tokens.js";
import { agentProcess, childrenPeakRssMb, processUsage } from "../kit/cluster/agent-process.js";
import { RealCluster } from "../kit/cluster/cluster.js";
import { agentStateDir } from "../kit/cluster/layout.js";
import { agentMetric, agentSeries, auditNode, Meshcni } from "../kit/cluster/meshcni.js";
import { flushOutbound, forgeRecord, inPodNetns, natRulesIn, netnsHolding, recordOf } from "../kit/cluster/records.js";
import { asList, type EventObject, meshedPod, plainPod, proxyOutbound, squatterPod } from "../kit/cluster/workloads.js";
import { sleep, until } from "../kit/common.js";
import { describeAsRoot } from "../kit/root-suites.js";

/** The agent's sweeps, this often: "within two sweeps" is then within 20 s (and a sweep's own time). */
const auditSeconds = 10;

/** `skip-subnets` listing `count` CIDRs (10.x.y.0/24, none the pods use). */
const subnets = (count: number) => Array.from({ length: count }, (_, i) => `10.${100 + (i >> 8)}.${i & 255}.0/24`).join(",");

/** Port ranges that send no TCP of the pod's through its proxy. */
const skipAll = { "config.linkerd.io/skip-inbound-ports": "1-65535", "config.linkerd.io/skip-outbound-ports": "1-65535" };

/**
 * Issue 57 on a real cluster, as tenants would try it: pods whose annotations are as large
 * as meshcni allows (one past it refused at its sandbox's ADD) while another pod's redirect
 * is flushed by hand and must be repaired within two sweeps; a pod with NET_ADMIN in its
 * own netns (its netns entered from the node, as the pod's own iptables would) sending its
 * TCP around the proxy untracked, which the agent must report; and a tenant given a hostPath
 * to the agent's state dir, which puts its own listener in the agent's socket's place and
 * points its pod's ADD record at another pod's netns.
 */
describeAsRoot("tenants against meshcni on a real cluster", () => {
  const cluster = new RealCluster();
  const meshcni = new Meshcni(cluster);
  let clientIp = "";

  /** The agent's audits so far: how many, and their time together (meshcni_audit_duration_seconds). */
  const audits = async () => ({
    count: Number(await agentMetric("meshcni_audit_duration_seconds_count")),
    sum: Number(await agentMetric("meshcni_audit_duration_seconds_sum")),
  });
  const events = async (pod: string) =>
    (await cluster.get<{ items: EventObject[] }>("events", "--field-selector", `involvedObject.name=${pod}`)).items;

  beforeAll(async () => {
    await cluster.up();
    await meshcni.deploy();
    // Sweeps more often than the default minute (an agent flag the manifests leave at its default), rolled out.
    const args = ["--audit-seconds", String(auditSeconds)].map((value) => ({
      op: "add",
      path: "/spec/template/spec/containers/0/args/-",
      value,
    }));
    await cluster.kubectl(["-n", "meshcni", "patch", "daemonset", "meshcni", "--type=json", "-p", JSON.stringify(args)]);
    await meshcni.rolledOut();
    const wide = { "config.linkerd.io/skip-subnets": subnets(maxAnnotationTokens) };
    await cluster.kubectl(
      ["apply", "-f", "-"],
      asList(
        plainPod("client"),
        meshedPod("victim", { sidecar: "container" }),
        meshedPod("sneaky", { sidecar: "container" }),
        meshedPod("guarded", { sidecar: "container" }),
        meshedPod("porous", { sidecar: "container", annotations: skipAll }),
        ...[1, 2, 3].map((n) => meshedPod(`wide-${n}`, { sidecar: "container", annotations: wide })),
        meshedPod("wider", { sidecar: "container", annotations: { "config.linkerd.io/skip-subnets": subnets(maxAnnotationTokens + 1) } }),
      ),
    );
    for (const pod of ["client", "victim", "sneaky", "guarded", "porous", "wide-1", "wide-2", "wide-3"])
      await cluster.kubectl(["wait", "--for=condition=Ready", `pod/${pod}`, "--timeout=120s"]);
    clientIp = await cluster.podIp("client");
  }, 400_000);

  afterAll(async () => {
    await cluster.down();
  }, 120_000);

  it("refuses a pod whose annotation lists more than the cap at its sandbox's ADD, naming the annotation and the count", async () => {
    await until(
      async () => (await events("wider")).some((event) => event.message.includes(`has ${maxAnnotationTokens + 1} entries`)),
      60_000,
      1000,
    );
    const refused = (await events("wider")).find((event) => event.message.includes("entries"))!;
    expect(refused).toMatchObject({ reason: "FailedCreatePodSandBox", type: "Warning" });
    expect(refused.message).toContain(
      `pod annotation config.linkerd.io/skip-subnets has ${maxAnnotationTokens + 1} entries: at most ${maxAnnotationTokens}`,
    );
  });

  it("repairs a flushed redirect within two sweeps beside three pods with the largest annotations allowed", async () => {
    // The agent's own cost beside them (figures, not targets): its CPU over three sweeps (its sweeps' processes' included), its peak memory so far.
    const pid = (await agentProcess(cluster))!;
    const [before, sweepsBefore] = [processUsage(pid), await audits()];
    const sweepPeakMb = await childrenPeakRssMb(pid, AbortSignal.timeout(3 * auditSeconds * 1000));
    const [after, sweepsAfter] = [processUsage(pid), await audits()];
    const perSweep = (after.cpuSeconds - before.cpuSeconds) / (sweepsAfter.count - sweepsBefore.count);
    const sweepTime = (sweepsAfter.sum - sweepsBefore.sum) / (sweepsAfter.count - sweepsBefore.count);
    console.log(
      `the agent beside three pods at the cap: ${perSweep.toFixed(2)} s of CPU and ${sweepTime.toFixed(2)} s a sweep ` +
        `(${sweepsAfter.count - sweepsBefore.count} sweeps in ${3 * auditSeconds} s); peak memory ${after.peakRssMb.toFixed(0)} MB, ` +
        `its sweeps' processes ${sweepPeakMb.toFixed(0)} MB`,
    );
    expect(await cluster.connect("victim", `${clientIp}:8080`)).toContain(proxyOutbound);
    await flushOutbound("victim");
    const flushedAt = Date.now();
    // The bypass itself is proven with TCP by the next test; here a sweep may mend it before a connection could show it.
    const repaired = () =>
      events("victim").then((found) => found.some((event) => event.reason === "MeshRedirectDrifted" && event.action === "WriteRedirect"));
    await until(repaired, 2 * auditSeconds * 1000 + 15_000, 250);
    const repairedInMs = Date.now() - flushedAt;
    console.log(
      `the victim's flushed redirect was repaired ${(repairedInMs / 1000).toFixed(1)} s after the flush (sweeps every ${auditSeconds} s)`,
    );
    expect(repairedInMs).toBeLessThan(2 * auditSeconds * 1000 + 5000);
    expect(await events("victim")).toContainEqual(
      expect.objectContaining({ reason: "MeshRedirectDrifted", action: "WriteRedirect", type: "Normal" }),
    );
    expect(await cluster.connect("victim", `${clientIp}:8080`)).toContain(proxyOutbound);
  });

  it("reports a pod whose own NET_ADMIN sends its TCP around the proxy untracked: a Warning, and no claim it was mended", async () => {
    expect(await cluster.connect("sneaky", `${clientIp}:8080`)).toContain(proxyOutbound);
    for (const chain of ["OUTPUT", "PREROUTING"])
      await inPodNetns("sneaky", "iptables-nft", "-t", "raw", "-A", chain, "-p", "tcp", "-j", "CT", "--notrack");
    expect(await cluster.connect("sneaky", `${clientIp}:8080`)).toContain("client-8080");
    await until(
      async () => (await events("sneaky")).some((event) => event.type === "Warning" && event.message.includes("untracked TCP")),
      2 * auditSeconds * 1000 + 15_000,
      1000,
    );
    const warning = (await events("sneaky")).find((event) => event.message.includes("untracked TCP"))!;
    expect(warning).toMatchObject({ reason: "MeshRedirectDrifted", action: "WriteRedirect" });
    expect(warning.message).toContain("rules that are not meshcni's send its TCP around the redirect");
    expect(await events("sneaky")).not.toContainEqual(expect.objectContaining({ reason: "MeshRedirectDrifted", type: "Normal" }));
  });

  it("gives a listener put in the agent's socket's place nothing: pods started meanwhile are redirected, and the agent takes it back", async () => {
    const socket = join(agentStateDir, "agent/plugin.sock");
    await cluster.kubectl(["apply", "-f", "-"], asList(squatterPod("squatter", agentStateDir, socket)));
    const squatterLog = async () =>
      (await cluster.kubectl(["logs", "squatter"]))
        .split("\n")
        .filter((line) => line.startsWith("{"))
        .map((line) => JSON.parse(line) as { squatting?: string; connection?: { bytes: number; rights: number } });
    await until(async () => (await squatterLog().catch(() => [])).some((line) => line.squatting), 60_000, 250);
    // It takes the path back within 50 ms of the agent's taking it: each of these ADDs most likely meets it, and all three one.
    const started = ["started-1", "started-2", "started-3"];
    await cluster.kubectl(["apply", "-f", "-"], asList(...started.map((name) => meshedPod(name, { sidecar: "container" }))));
    for (const pod of started) await cluster.kubectl(["wait", "--for=condition=Ready", `pod/${pod}`, "--timeout=120s"]);
    for (const pod of started) expect(await cluster.connect(pod, `${clientIp}:8080`)).toContain(proxyOutbound);
    const held = await squatterLog();
    const connections = held.flatMap((line) => (line.connection ? [line.connection] : []));
    // Met, and sent nothing: no question, no netns. (Not met once in CI: what each side said, to tell why next time.)
    const socketLines = (await meshcni.log()).filter((line) => String(line.msg).includes("plugin's socket"));
    const why = `the squatter's last lines ${JSON.stringify(held.slice(-8))}; the agent's of its socket ${JSON.stringify(socketLines)}`;
    expect(connections.length, why).toBeGreaterThan(0);
    expect(connections).toEqual(connections.map(() => ({ bytes: 0, rights: 0 })));
    expect(held.filter((line) => line.squatting).length).toBeGreaterThan(1);
    expect(await meshcni.log()).toContainEqual(expect.objectContaining({ msg: "the plugin's socket was replaced: took it back" }));
    expect(await agentSeries("meshcni_plugin_socket_taken_back_total", {})).toBeGreaterThan(0);
    await cluster.kubectl(["delete", "pod", "squatter", "--wait=true"]);
    // The agent's again within its second's look: the next pod's ADD is the agent's to write.
    const written = () => agentSeries("meshcni_agent_writes_total", { verb: "ADD", result: "done" }).then((count) => count ?? 0);
    const writtenBefore = await written();
    await sleep(2000);
    await cluster.kubectl(["apply", "-f", "-"], asList(meshedPod("after-squatter", { sidecar: "container" })));
    await cluster.kubectl(["wait", "--for=condition=Ready", "pod/after-squatter", "--timeout=120s"]);
    expect(await written()).toBeGreaterThan(writtenBefore);
  });

  it("writes no pod's plan into a netns its forged ADD record names: claimed twice, taken as neither's; alone, not the pod's by the runtime's word", async () => {
    const guarded = recordOf("guarded");
    const porousNetns = recordOf("porous").netns;
    const guardedRules = await natRulesIn(guarded);
    expect(await cluster.connect("porous", `${clientIp}:8080`)).toContain("client-8080");
    // Pointed at a meshed pod's netns: two records claim it.
    forgeRecord("porous", { netns: guarded.netns });
    await until(
      async () => ((await agentSeries("meshcni_meshed_pods", { status: "unknown" })) ?? 0) >= 2,
      2 * auditSeconds * 1000 + 15_000,
      500,
    );
    const audited = await auditNode();
    for (const pod of ["guarded", "porous"])
      expect(audited?.find((verdict) => verdict.name === pod)).toMatchObject({
        status: "unknown",
        details: [expect.stringContaining(`netns ${guarded.netns} is claimed by 2 pods`)],
      });
    // Pointed at a plain pod's netns: one record claims it, and the runtime says the pod's sandbox is elsewhere.
    const clientNetns = await netnsHolding(clientIp);
    const clientRules = await natRulesIn({ netns: clientNetns, backend: guarded.backend });
    forgeRecord("porous", { netns: clientNetns });
    await sleep(2 * auditSeconds * 1000 + 5000);
    expect(await natRulesIn({ netns: clientNetns, backend: guarded.backend })).toBe(clientRules);
    expect(await natRulesIn(guarded)).toBe(guardedRules);
    expect(await cluster.connect("guarded", `${clientIp}:8080`)).toContain(proxyOutbound);
    expect(await meshcni.log()).toContainEqual(
      expect.objectContaining({
        level: "warn",
        msg: "leaving an unprotected pod alone",
        pod: "default/porous",
        reason: expect.stringContaining(`its ADD record names netns ${clientNetns}, but the container runtime says`),
      }),
    );
    forgeRecord("porous", { netns: porousNetns });
  });
});
