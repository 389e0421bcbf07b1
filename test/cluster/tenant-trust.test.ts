import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, expect, it } from "vitest";
import { maxAnnotationTokens } from "../../src/mesh/tokens.js";
import { RealCluster } from "../kit/cluster/cluster.js";
import { agentStateDir } from "../kit/cluster/layout.js";
import { Meshcni } from "../kit/cluster/meshcni.js";
import { asList, type EventObject, meshedPod, plainPod, proxyOutbound } from "../kit/cluster/workloads.js";
import { until } from "../kit/common.js";
import { describeAsRoot } from "../kit/root-suites.js";

/** The agent's sweeps, this often: "within two sweeps" is then within 20 s (and a sweep's own time). */
const auditSeconds = 10;

/** `skip-subnets` listing `count` CIDRs (10.x.y.0/24, none the pods use). */
const subnets = (count: number) => Array.from({ length: count }, (_, i) => `10.${100 + (i >> 8)}.${i & 255}.0/24`).join(",");

/**
 * Issue 57 on a real cluster, as tenants would try it: pods whose annotations are as large
 * as meshcni allows (one past it refused at its sandbox's ADD) while another pod's redirect
 * is flushed by hand and must be repaired within two sweeps; and a pod with NET_ADMIN in its
 * own netns (its netns entered from the node, as the pod's own iptables would) sending its
 * TCP around the proxy untracked, which the agent must report.
 */
describeAsRoot("tenants against meshcni on a real cluster", () => {
  const cluster = new RealCluster();
  const meshcni = new Meshcni(cluster);
  let clientIp = "";

  /** A pod's ADD record on the node: its netns and the backend holding its redirect. */
  const recordOf = (pod: string): { netns: string; backend: string } => {
    const dir = join(agentStateDir, "attachments");
    for (const file of readdirSync(dir).filter((name) => name.endsWith(".json"))) {
      const record = JSON.parse(readFileSync(join(dir, file), "utf8")) as { pod: { name: string }; netns: string; backend: string };
      if (record.pod.name === pod) return record;
    }
    throw new Error(`no ADD record for pod ${pod}`);
  };
  const inPodNetns = (pod: string, ...argv: string[]) => execa("nsenter", [`--net=${recordOf(pod).netns}`, "--", ...argv]);
  /** Empties the pod's outbound redirect chain by hand, in whichever backend holds it. */
  const flushOutbound = (pod: string) => {
    const { backend } = recordOf(pod);
    if (backend === "nftables") return inPodNetns(pod, "nft", "flush", "chain", "ip", "meshcni", "PROXY_INIT_OUTPUT");
    const iptables = backend === "legacy" ? "iptables-legacy" : backend === "plain" ? "iptables" : "iptables-nft";
    return inPodNetns(pod, iptables, "-t", "nat", "-F", "PROXY_INIT_OUTPUT");
  };
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
        ...[1, 2, 3].map((n) => meshedPod(`wide-${n}`, { sidecar: "container", annotations: wide })),
        meshedPod("wider", { sidecar: "container", annotations: { "config.linkerd.io/skip-subnets": subnets(maxAnnotationTokens + 1) } }),
      ),
    );
    for (const pod of ["client", "victim", "sneaky", "wide-1", "wide-2", "wide-3"])
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
});
