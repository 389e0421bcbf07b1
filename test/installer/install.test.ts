import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import packageJson from "../../package.json" with { type: "json" };
import { createAgentMetrics } from "../../src/agent/metrics.js";
import { alertRules } from "../../src/manifests/alerts.js";
import { grafanaDashboard } from "../../src/manifests/dashboard.js";
import { AgentHarness, conflist, primaryBinDir } from "../kit/agent.js";
import { FakeApiServer, podObject } from "../kit/api-server.js";
import { isRoot, sleep } from "../kit/common.js";
import { meshcniBinary, promtoolBinary } from "../kit/network.js";

const calico = (revision = 1) =>
  conflist(
    "k8s-pod-network",
    [
      { type: "calico", revision, ipam: { type: "calico-ipam" } },
      { type: "portmap", capabilities: { portMappings: true } },
    ],
    { disableCheck: false },
  );

describe("meshcni install", () => {
  let host: AgentHarness;
  afterEach(async () => host?.cleanup());

  async function started(files: Record<string, string>, extra: string[] = []): Promise<AgentHarness> {
    host = new AgentHarness();
    for (const [name, text] of Object.entries(files)) writeFileSync(host.path(name), text);
    await host.start(extra);
    return host;
  }

  const chainedIn = (name: string) => () => host.types(name).at(-1) === "meshcni";
  // With the agent's own flags: its /readyz gives the verdict, the disk the reasons.
  const ready = () => spawnSync(meshcniBinary, ["ready", ...host.args(["--listen", host.address])], { env: host.env, encoding: "utf8" });

  it("installs the binary and kubeconfig, chains into the active config, and reports ready", async () => {
    await started({ "10-calico.conflist": calico() });
    await host.waitFor(chainedIn("10-calico.conflist"));
    expect(host.types("10-calico.conflist")).toEqual(["calico", "portmap", "meshcni"]);
    const { plugins, ...rest } = host.json("10-calico.conflist");
    const { plugins: originalPlugins, ...originalRest } = JSON.parse(calico());
    expect(rest).toEqual(originalRest);
    expect(plugins!.slice(0, 2)).toEqual(originalPlugins);
    expect(plugins![2]).toMatchObject({ kubernetes: { kubeconfig: "/etc/cni/net.d/ZZZ-meshcni-kubeconfig" } });
    expect(readFileSync(`${host.binDir}/meshcni`).equals(readFileSync(meshcniBinary))).toBe(true);
    expect(statSync(`${host.binDir}/meshcni`).mode & 0o777).toBe(0o755);
    await host.waitFor(async () => (await host.readyz()).status === 200);
    expect(statSync(host.kubeconfigPath).mode & 0o777).toBe(0o600);
    // The plugin's kubeconfig holds a token minted for its own ServiceAccount, never the agent's.
    expect(host.ownApi!.minted.get(host.pluginToken())?.serviceAccount).toBe("meshcni/meshcni-plugin");
    expect(host.kubeconfig()).not.toContain("token-one");
    expect(host.kubeconfig()).toContain(`"server": "https://127.0.0.1:${host.ownApi!.port}"`);
    expect(await host.metric("meshcni_ready")).toBe(1);
    const healthz = await fetch(`http://${host.address}/healthz`);
    expect([healthz.status, await healthz.text()]).toEqual([200, "ok\n"]);
    expect((await fetch(`http://${host.address}/nothing`)).status).toBe(404);
    expect(ready().status).toBe(0);
    expect(host.stderr.join("\n")).not.toContain("token-one");
  });

  it.each([
    ["flags", (template: string) => ({ args: ["--kubeconfig-name", "ZZZ-linkerd-cni-kubeconfig", "--template-file", template], env: {} })],
    [
      "Linkerd's environment",
      (template: string) => ({ args: [], env: { KUBECONFIG_FILE_NAME: "ZZZ-linkerd-cni-kubeconfig", CNI_NETWORK_CONFIG_FILE: template } }),
    ],
  ])("writes Linkerd's kubeconfig name and a template read from a file, given as %s", async (_how, given) => {
    host = new AgentHarness();
    writeFileSync(host.path("10-calico.conflist"), calico());
    const template = join(host.root, "template.json");
    writeFileSync(
      template,
      JSON.stringify({ name: "meshcni", type: "meshcni", log_level: "warn", kubernetes: { kubeconfig: "__KUBECONFIG_FILEPATH__" } }),
    );
    const { args, env } = given(template);
    await host.start(args, env);
    await host.waitFor(chainedIn("10-calico.conflist"));
    expect(host.json("10-calico.conflist").plugins!.at(-1)).toMatchObject({
      log_level: "warn",
      kubernetes: { kubeconfig: "/etc/cni/net.d/ZZZ-linkerd-cni-kubeconfig" },
    });
    await host.waitFor(() => existsSync(host.path("ZZZ-linkerd-cni-kubeconfig")));
    expect(existsSync(host.kubeconfigPath)).toBe(false);
  });

  it("trusts the API server through KUBE_CA_FILE, or not at all with SKIP_TLS_VERIFY=true, over a projected CA that is wrong", async () => {
    const api = await new FakeApiServer().start();
    try {
      // Another server's CA: valid, and not the one that signed this server's certificate.
      const other = await new FakeApiServer().start();
      const wrongCa = other.caPem;
      await other.stop();
      const endpoint = { KUBERNETES_SERVICE_HOST: "127.0.0.1", KUBERNETES_SERVICE_PORT: String(api.port) };
      const caFile = join(api.dir, "ca.pem");
      writeFileSync(caFile, api.caPem);
      for (const [env, cluster] of [
        [{ KUBE_CA_FILE: caFile }, { "certificate-authority-data": Buffer.from(api.caPem).toString("base64") }],
        [{ SKIP_TLS_VERIFY: "true" }, { "insecure-skip-tls-verify": true }],
      ] as const) {
        host = new AgentHarness();
        writeFileSync(host.path("10-calico.conflist"), calico());
        host.rotateToken(api.agentToken, wrongCa);
        await host.start([], { ...endpoint, ...env });
        await host.waitFor(async () => (await host.readyz()).status === 200, 10_000);
        // The plugin's kubeconfig trusts the server the same way the agent did.
        expect(parseYaml(host.kubeconfig()).clusters[0].cluster).toEqual({ server: `https://127.0.0.1:${api.port}`, ...cluster });
        await host.cleanup();
      }
      // Neither: the wrong CA is refused; the agent says why and stays not ready (no plugin kubeconfig).
      host = new AgentHarness();
      writeFileSync(host.path("10-calico.conflist"), calico());
      host.rotateToken(api.agentToken, wrongCa);
      await host.start([], endpoint);
      await host.waitFor(() => host.notReadyBecause("kubeconfig"), 10_000);
      expect((await host.readyz()).status).toBe(503);
      await host.waitFor(() => host.logs.some((line) => line.level === "warn" && line.msg.includes("self signed certificate")), 10_000);
    } finally {
      await api.stop();
    }
  });

  it("serves the metrics the README lists, with their types and labels, and the process's own, each series with its node", async () => {
    await started({ "10-calico.conflist": calico() }, ["--node", "n1"]);
    await host.waitFor(async () => (await host.readyz()).status === 200);
    const text = await host.scrape();
    // As Prometheus's own linter reads it: types, names, suffixes, help.
    expect(execFileSync(promtoolBinary, ["check", "metrics"], { input: text, encoding: "utf8" })).toBe("");
    const served = Object.fromEntries([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((match) => [match[1], match[2]]));
    // Every series the alerts and the dashboard read is one the agent serves.
    const queries = JSON.stringify([alertRules.map((rule) => rule.expr), grafanaDashboard()]);
    for (const [name] of queries.matchAll(/\b(?:meshcni|process)_[a-z_]+/g))
      expect(served, name).toHaveProperty(name.replace(/_bucket$/, ""));
    const readme = readFileSync(join(import.meta.dirname, "../../README.md"), "utf8");
    const rows = [...readme.matchAll(/^\| `(meshcni_[a-z_]+)` +\| (\w+) +\| ([^|]*)\|/gm)];
    const documented = Object.fromEntries(rows.map((row) => [row[1], row[2]]));
    expect(Object.keys(documented).length).toBeGreaterThanOrEqual(9);
    expect(Object.fromEntries(Object.entries(served).filter(([name]) => name.startsWith("meshcni_")))).toEqual(documented);
    const processMetrics = /and the process's own \(([^)]*)\)/.exec(readme)![1]!.match(/`[a-z_]+`/g)!;
    for (const name of processMetrics) expect(served, name).toHaveProperty(name.replaceAll("`", ""));
    const version = execFileSync(meshcniBinary, ["--version"], { encoding: "utf8" });
    const [, commit] = /commit ([^,]+),/.exec(version)!;
    expect(text).toMatch(
      new RegExp(`^meshcni_build_info\\{version="${packageJson.version}",commit="${commit}",runtime="bun [0-9.]+",node="n1"\\} 1$`, "m"),
    );
    // Every series carries its node: the alerts name the node by it, whatever labels the scrape adds.
    const series = text.split("\n").filter((line) => line && !line.startsWith("#"));
    expect(series.length).toBeGreaterThan(20);
    for (const line of series) expect(line).toMatch(/[{,]node="n1"[,}]/);
    // The labels the README names are the ones each metric declares (whether it has a series yet or not), and the ones served.
    const declared = createAgentMetrics("n1").registry;
    for (const [, name, , labels] of rows) {
      const named = [...labels!.matchAll(/`(\w+)`/g)].map((match) => match[1]!);
      const metric = declared.getSingleMetric(name!) as unknown as { labelNames: string[] } | undefined;
      expect([...(metric?.labelNames ?? ["not registered"])].sort(), name).toEqual([...named].sort());
      for (const line of series.filter((entry) => entry.startsWith(`${name}{`)))
        expect(Object.keys(Object.fromEntries([...line.matchAll(/(\w+)="/g)].map((m) => [m[1], 1]))).sort(), line).toEqual(
          [...named, "node"].sort(),
        );
    }
  });

  it("re-chains after an in-place rewrite (Calico), a rename over (AWS VPC CNI), and a delete and recreate", async () => {
    await started({ "10-calico.conflist": calico() });
    await host.waitFor(chainedIn("10-calico.conflist"));
    host.writeInPlace("10-calico.conflist", calico(2));
    await host.waitFor(chainedIn("10-calico.conflist"));
    expect(host.json("10-calico.conflist").plugins![0]).toMatchObject({ revision: 2 });
    host.renameOver("10-calico.conflist", calico(3));
    await host.waitFor(chainedIn("10-calico.conflist"));
    expect(host.json("10-calico.conflist").plugins![0]).toMatchObject({ revision: 3 });
    host.remove("10-calico.conflist");
    await host.waitFor(async () => (await host.readyz()).status === 503);
    expect(ready().status).toBe(1);
    writeFileSync(host.path("10-calico.conflist"), calico(4));
    await host.waitFor(chainedIn("10-calico.conflist"));
    expect(await host.metric('meshcni_rechains_total{cause="entry_removed"}')).toBe(3);
    expect(await host.metric("meshcni_rechain_duration_seconds_count")).toBe(3);
    expect(await host.metric("meshcni_rechain_duration_seconds_sum")).toBeGreaterThan(0);
    await host.waitFor(async () => (await host.readyz()).status === 200);
  });

  it("moves to a new earlier-sorting config (Cilium arriving) and leaves the old one as it was", async () => {
    await started({ "10-calico.conflist": calico() });
    await host.waitFor(chainedIn("10-calico.conflist"));
    const cilium = conflist("cilium", [{ type: "cilium-cni", enable_debug: false }]);
    writeFileSync(host.path("05-cilium.conflist"), cilium);
    await host.waitFor(chainedIn("05-cilium.conflist"));
    await host.waitFor(() => host.types("10-calico.conflist").length === 2);
    expect(host.json("10-calico.conflist")).toEqual(JSON.parse(calico()));
    expect(host.types("05-cilium.conflist")).toEqual(["cilium-cni", "meshcni"]);
    expect(await host.metric('meshcni_rechains_total{cause="active_config_changed"}')).toBe(1);
  });

  it("wraps a lone .conf into a .conflist the way the runtime reads it", async () => {
    const bridge = {
      cniVersion: "0.4.0",
      name: "mynet",
      type: "bridge",
      bridge: "cni0",
      ipam: { type: "host-local", subnet: "10.22.0.0/16" },
    };
    await started({ "10-mynet.conf": JSON.stringify(bridge) });
    await host.waitFor(chainedIn("10-mynet.conflist"));
    await host.waitFor(() => !readdirSync(host.netDir).includes("10-mynet.conf"));
    const wrapped = host.json("10-mynet.conflist");
    expect(wrapped).toMatchObject({ cniVersion: "0.4.0", name: "mynet" });
    expect(wrapped.plugins![0]).toEqual(bridge);
  });

  it("touches only the active config when two agents' files are there", async () => {
    const other = conflist("other", [{ type: "macvlan", master: "eth0" }]);
    await started({ "10-calico.conflist": calico(), "20-other.conflist": other, "README.txt": "not a config" });
    await host.waitFor(chainedIn("10-calico.conflist"));
    expect(host.read("20-other.conflist")).toBe(other);
    expect(host.read("README.txt")).toBe("not a config");
  });

  it("waits out a half-written foreign config instead of acting on it", async () => {
    await started({ "10-calico.conflist": calico() });
    await host.waitFor(chainedIn("10-calico.conflist"));
    const cilium = conflist("cilium", [{ type: "cilium-cni" }]);
    host.writeInPlace("05-cilium.conflist", cilium.slice(0, 40));
    // The agent saw it, and waits for the rest.
    await host.waitFor(() =>
      host.logs.some(
        (line) => line.msg === "the active config is not valid yet, retrying shortly" && String(line.file).endsWith("05-cilium.conflist"),
      ),
    );
    expect(host.read("05-cilium.conflist")).toBe(cilium.slice(0, 40));
    expect(host.types("10-calico.conflist").at(-1)).toBe("meshcni");
    host.writeInPlace("05-cilium.conflist", cilium);
    await host.waitFor(chainedIn("05-cilium.conflist"));
    await host.waitFor(() => host.types("10-calico.conflist").length === 2);
    expect(host.stderr.some((line) => line.includes('"level":"error"'))).toBe(false);
  });

  it("renews the plugin's minted token before it expires; the agent's own, even rotated, never touches the disk or the log", async () => {
    const api = await new FakeApiServer().start();
    try {
      // This server grants tokens 12 s whatever is asked: renewed at 80% (~9.6 s), never within 10 s of the last.
      api.maxTokenSeconds = 12;
      host = new AgentHarness();
      writeFileSync(host.path("10-calico.conflist"), calico());
      await host.startWithApi(api, ["--plugin-token-seconds", "600"]);
      await host.waitFor(() => host.kubeconfig() !== "", 5000);
      const first = host.pluginToken();
      expect(api.minted.get(first)?.serviceAccount).toBe("meshcni/meshcni-plugin");
      await host.waitFor(() => host.pluginToken() !== first, 15_000);
      expect(api.minted.get(host.pluginToken())?.serviceAccount).toBe("meshcni/meshcni-plugin");
      // Logged once the file is written: the line may still be in the pipe when the file is seen.
      await host.waitFor(() => host.logs.some((line) => line.msg.includes("kubeconfig rewritten (a renewed token")), 2000);
      // kubelet rotates the agent's projected token: it keeps minting with the new one.
      api.agentTokens.add("token-two");
      host.rotateToken("token-two");
      const second = host.pluginToken();
      await host.waitFor(() => host.pluginToken() !== second, 15_000);
      const mints = api.requestsTo("POST", /\/serviceaccounts\/meshcni-plugin\/token$/);
      expect(mints.every((request) => request.who === "agent")).toBe(true);
      expect(statSync(host.kubeconfigPath).mode & 0o777).toBe(0o600);
      expect(host.kubeconfig()).not.toMatch(new RegExp(`${api.token}|token-two`));
      expect(host.stderr.join("\n")).not.toMatch(new RegExp(`${api.token}|token-two|minted-`));
    } finally {
      await host.cleanup();
      await api.stop();
    }
  });

  it("uninstalls on SIGTERM outside a pod: every config restored in meaning, kubeconfig, binary and state dir removed, exit 0", async () => {
    const bridge = { cniVersion: "1.0.0", name: "mynet", type: "bridge" };
    await started({ "10-calico.conflist": calico() });
    await host.waitFor(chainedIn("10-calico.conflist"));
    writeFileSync(host.path("05-mynet.conf"), JSON.stringify(bridge));
    await host.waitFor(chainedIn("05-mynet.conflist"));
    mkdirSync(join(host.stateDir, "attachments"), { recursive: true });
    // Set aside with the entry in it, as Cilium's cni.exclusive renames the others: the entry is taken out too.
    const backup = JSON.stringify({ ...JSON.parse(calico()), plugins: [...JSON.parse(calico()).plugins, { type: "meshcni" }] });
    writeFileSync(host.path("20-old.conflist.cilium_bak"), backup);
    expect(await host.stop("SIGTERM")).toBe(0);
    expect(host.json("10-calico.conflist")).toEqual(JSON.parse(calico()));
    expect(host.json("05-mynet.conflist")).toEqual({ cniVersion: "1.0.0", name: "mynet", plugins: [bridge] });
    expect(host.json("20-old.conflist.cilium_bak")).toEqual(JSON.parse(calico()));
    expect(readdirSync(host.netDir).sort()).toEqual(["05-mynet.conflist", "10-calico.conflist", "20-old.conflist.cilium_bak"]);
    expect(readdirSync(host.binDir)).toEqual([]);
    expect(existsSync(host.stateDir)).toBe(false);
    expect(host.logs.find((line) => line.msg === "uninstalled")?.why).toContain("not running in a pod");
  });

  it("keeps everything on SIGTERM with --on-stop keep", async () => {
    await started({ "10-calico.conflist": calico() }, ["--on-stop", "keep"]);
    await host.waitFor(async () => (await host.readyz()).status === 200);
    const kubeconfig = host.kubeconfig();
    expect(await host.stop("SIGINT")).toBe(0);
    expect(host.types("10-calico.conflist").at(-1)).toBe("meshcni");
    expect(readdirSync(host.binDir)).toEqual(["meshcni"]);
    expect(host.kubeconfig()).toBe(kubeconfig);
  });

  describe("in a pod (--on-stop auto)", () => {
    const api = new FakeApiServer();
    const self = { POD_NAMESPACE: "meshcni", POD_NAME: "meshcni-x7k2p" };
    beforeAll(async () => {
      await api.start();
      api.addPod(podObject("meshcni", "meshcni-x7k2p", { proxy: false, daemonSet: "meshcni" }));
    });
    afterAll(() => api.stop());

    it("keeps everything while its DaemonSet stays (a rollout), and uninstalls once it is deleted", async () => {
      api.addDaemonSet("meshcni", "meshcni");
      host = new AgentHarness();
      writeFileSync(host.path("10-calico.conflist"), calico());
      await host.startWithApi(api, [], self);
      await host.waitFor(async () => (await host.readyz()).status === 200);
      expect(await host.stop()).toBe(0);
      expect(host.logs.find((line) => line.msg.startsWith("stopping; meshcni stays"))?.why).toBe(
        "the DaemonSet stays: a restart or rollout",
      );
      expect(host.types("10-calico.conflist").at(-1)).toBe("meshcni");
      expect(readdirSync(host.binDir)).toEqual(["meshcni"]);
      expect(host.kubeconfig()).not.toBe("");
      api.daemonSets.clear();
      await host.startWithApi(api, [], self);
      expect(await host.stop()).toBe(0);
      expect(host.logs.find((line) => line.msg === "uninstalled")?.why).toBe("the DaemonSet is deleted");
      expect(host.types("10-calico.conflist")).toEqual(["calico", "portmap"]);
      expect(readdirSync(host.binDir)).toEqual([]);
      expect(host.kubeconfig()).toBe("");
    });

    it("force-deleted (its pod gone before SIGTERM): keeps everything while the DaemonSet stays, uninstalls once it is deleted", async () => {
      const agentPod = () => podObject("meshcni", "meshcni-x7k2p", { proxy: false, daemonSet: "meshcni" });
      const learned = (times: number) => () =>
        host.logs.filter((line) => line.msg === "a stop will ask about this DaemonSet" && line.daemonSet === "meshcni").length === times;
      api.addDaemonSet("meshcni", "meshcni");
      host = new AgentHarness();
      writeFileSync(host.path("10-calico.conflist"), calico());
      await host.startWithApi(api, [], self);
      await host.waitFor(learned(1));
      api.deletePod("meshcni", "meshcni-x7k2p");
      expect(await host.stop()).toBe(0);
      expect(host.logs.find((line) => line.msg.startsWith("stopping; meshcni stays"))?.why).toBe(
        "the DaemonSet stays: a restart or rollout",
      );
      expect(host.types("10-calico.conflist").at(-1)).toBe("meshcni");
      api.addPod(agentPod());
      await host.startWithApi(api, [], self);
      await host.waitFor(learned(2));
      api.deletePod("meshcni", "meshcni-x7k2p");
      api.daemonSets.clear();
      expect(await host.stop()).toBe(0);
      expect(host.logs.find((line) => line.msg === "uninstalled")?.why).toBe("the DaemonSet is deleted");
      expect(host.types("10-calico.conflist")).toEqual(["calico", "portmap"]);
      api.addPod(agentPod());
    });

    it("stops cleanly while it audits and watches the node's pods: no warning, no error", async () => {
      api.addDaemonSet("meshcni", "meshcni");
      host = new AgentHarness();
      writeFileSync(host.path("10-calico.conflist"), calico());
      await host.startWithApi(api, ["--node", "node-a", "--audit-seconds", "1"], self);
      await host.waitFor(() => host.logs.filter((line) => line.msg === "sweep").length >= 2, 10_000);
      expect(await host.stop()).toBe(0);
      expect(host.logs.filter((line) => line.level === "warn" || line.level === "error")).toEqual([]);
    });
  });

  it("restarts idempotently: no rewrite of the binary or the config", async () => {
    await started({ "10-calico.conflist": calico() }, ["--on-stop", "keep"]);
    await host.waitFor(chainedIn("10-calico.conflist"));
    await host.waitFor(async () => (await host.readyz()).status === 200);
    expect(await host.stop()).toBe(0);
    writeFileSync(host.path("10-calico.conflist"), calico());
    await host.start();
    await host.waitFor(chainedIn("10-calico.conflist"));
    const before = { binary: statSync(`${host.binDir}/meshcni`).mtimeMs, config: statSync(host.path("10-calico.conflist")).mtimeMs };
    await host.stop("SIGKILL");
    await host.start();
    await host.waitFor(async () => (await host.readyz()).status === 200);
    expect(statSync(`${host.binDir}/meshcni`).mtimeMs).toBe(before.binary);
    expect(statSync(host.path("10-calico.conflist")).mtimeMs).toBe(before.config);
    expect(host.logs.filter((line) => line.msg === "binary already installed")).toHaveLength(2);
  });

  it("replaces an existing linkerd-cni entry and duplicate entries with one", async () => {
    const linkerd = { name: "linkerd-cni", type: "linkerd-cni", linkerd: {} };
    await started({ "10-calico.conflist": conflist("k8s", [{ type: "calico" }, linkerd, { type: "meshcni" }, { type: "portmap" }]) });
    await host.waitFor(() => host.types("10-calico.conflist").join() === "calico,portmap,meshcni");
    // Said once the file is written.
    await host.waitFor(() => host.logs.some((line) => line.msg.includes("duplicate")), 2000);
  });

  it("backs off and warns, naming the file, when another agent keeps removing the entry", async () => {
    await started({ "05-cilium.conflist": conflist("cilium", [{ type: "cilium-cni" }]) });
    await host.waitFor(chainedIn("05-cilium.conflist"));
    const started_ = performance.now();
    while (!host.logs.some((line) => line.level === "warn" && line.msg.includes("keeps removing")) && performance.now() - started_ < 5000) {
      if (host.types("05-cilium.conflist").includes("meshcni"))
        host.renameOver("05-cilium.conflist", conflist("cilium", [{ type: "cilium-cni" }]));
      await sleep(5);
    }
    const warning = host.logs.find((line) => line.level === "warn" && line.msg.includes("keeps removing"));
    expect(warning?.msg).toContain(host.path("05-cilium.conflist"));
    expect(warning?.msg).toContain("cni.exclusive");
    expect(await host.metric("meshcni_fights_total")).toBe(1);
    // Backing off (1 s first): a change to the file meanwhile is looked at, and left stripped.
    const heldFrom = host.logs.length;
    host.writeInPlace("05-cilium.conflist", conflist("cilium", [{ type: "cilium-cni" }]));
    await host.waitFor(() => host.logs.slice(heldFrom).some((line) => line.msg === "reconcile"), 900);
    expect(host.types("05-cilium.conflist")).toEqual(["cilium-cni"]);
    await host.waitFor(chainedIn("05-cilium.conflist"), 3000);
  });

  it("names a chain the runtime cannot run (portmap not installed): not ready, ChainBroken, the plugin's metric, and ready once it is", async () => {
    host = new AgentHarness();
    const portmap = join(host.hostRoot, primaryBinDir, "portmap");
    rmSync(portmap);
    writeFileSync(host.path("10-calico.conflist"), calico());
    await host.start(["--resync-seconds", "1"]);
    // meshcni chains all the same, so that the node is ready the moment the plugin is there.
    await host.waitFor(chainedIn("10-calico.conflist"));
    const reason = `${host.path("10-calico.conflist")} chains portmap, with no executable in ${host.binDir} or ${join(host.hostRoot, primaryBinDir)}: the runtime fails every pod's ADD and DEL on this node`;
    // Once the kubeconfig is written, the chain is all that is missing.
    const saidAlone = () => host.logs.filter((line) => line.msg === "not ready" && String(line.reasons) === reason);
    await host.waitFor(() => saidAlone().length > 0);
    expect(await host.readyz()).toEqual({ status: 503, body: "not ready: ChainBroken\n" });
    expect(await host.metric('meshcni_chain_missing_plugin{type="portmap"}')).toBe(1);
    expect(await host.metric("meshcni_ready")).toBe(0);
    expect(ready()).toMatchObject({ status: 1, stdout: `not ready (ChainBroken): ${reason}\n` });
    // Said once, not at every resync: two resyncs after it, still one line.
    const saidAt = host.logs.indexOf(saidAlone()[0]!);
    await host.waitFor(() => host.logs.slice(saidAt).filter((line) => line.msg === "reconcile").length >= 2, 5000);
    expect(saidAlone()).toHaveLength(1);
    writeFileSync(portmap, "#!/bin/sh\n", { mode: 0o755 });
    await host.waitFor(async () => (await host.readyz()).status === 200);
    expect(await host.scrape()).not.toContain("meshcni_chain_missing_plugin{");
    expect(ready()).toMatchObject({ status: 0, stdout: "ready: meshcni is chained in 10-calico.conflist\n" });
  });

  it("follows a new primary that takes over (Cilium over azure-vnet), staying where the runtime may fall back until the new chain can run", async () => {
    host = new AgentHarness();
    const ciliumBinary = join(host.hostRoot, primaryBinDir, "cilium-cni");
    rmSync(ciliumBinary);
    writeFileSync(host.path("10-azure.conflist"), conflist("azure", [{ type: "azure-vnet" }]));
    await host.start();
    await host.waitFor(async () => (await host.readyz()).status === 200);
    // Cilium's config lands before its agent has installed its binary.
    writeFileSync(host.path("05-cilium.conflist"), conflist("cilium", [{ type: "cilium-cni" }]));
    await host.waitFor(chainedIn("05-cilium.conflist"));
    await host.waitFor(async () => (await host.readyz()).body === "not ready: ChainBroken\n");
    // CRI-O skips 05-cilium for 10-azure: meshcni stays there meanwhile.
    expect(host.types("10-azure.conflist")).toEqual(["azure-vnet", "meshcni"]);
    expect(host.logs.some((line) => line.msg === "chained meshcni into the next config as well")).toBe(false);
    // cni.exclusive sets the old primary's config aside; then Cilium's binary arrives.
    renameSync(host.path("10-azure.conflist"), host.path("10-azure.conflist.cilium_bak"));
    await host.waitFor(() => host.types("10-azure.conflist.cilium_bak").length === 1);
    writeFileSync(ciliumBinary, "#!/bin/sh\n", { mode: 0o755 });
    await host.waitFor(async () => (await host.readyz()).status === 200);
    expect(readdirSync(host.netDir).sort()).toEqual(["05-cilium.conflist", "10-azure.conflist.cilium_bak", "ZZZ-meshcni-kubeconfig"]);
    expect(host.json("10-azure.conflist.cilium_bak")).toEqual(JSON.parse(conflist("azure", [{ type: "azure-vnet" }])));
  });

  it("meshcni ready gives the agent's verdict, and no agent answering is not ready", async () => {
    await started({ "10-calico.conflist": calico() });
    await host.waitFor(async () => (await host.readyz()).status === 200);
    // With the agent's flags: the verdict is its /readyz.
    expect(ready()).toMatchObject({ status: 0, stdout: "ready: meshcni is chained in 10-calico.conflist\n" });
    const address = host.address;
    await host.stop();
    const refused = spawnSync(meshcniBinary, ["ready", ...host.args(["--listen", address])], { env: host.env, encoding: "utf8" });
    expect(refused.status).toBe(1);
    expect(refused.stdout).toContain(`not ready: no agent answers at http://${address}/readyz`);
  });

  describe("bad input: a clear log line, not ready, nothing damaged", () => {
    it("waits with no config at all, never writing a standalone one", async () => {
      await started({});
      await host.waitFor(() => host.notReadyBecause("no CNI config"));
      await host.waitFor(() => host.kubeconfig() !== "");
      expect(readdirSync(host.netDir)).toEqual(["ZZZ-meshcni-kubeconfig"]);
      writeFileSync(host.path("10-calico.conflist"), calico());
      await host.waitFor(chainedIn("10-calico.conflist"));
    });

    it("refuses an invalid template", async () => {
      host = new AgentHarness();
      writeFileSync(host.path("10-calico.conflist"), calico());
      await host.start(["--template", '{"type":"calico"}']);
      await host.waitFor(() =>
        host.logs.some((line) => line.level === "error" && line.msg.includes('type must be "meshcni" or "linkerd-cni"')),
      );
      expect((await host.readyz()).status).toBe(503);
      expect(host.read("10-calico.conflist")).toBe(calico());
      expect(readdirSync(host.binDir)).toEqual([]);
      expect(ready().status).toBe(1);
    });

    it("reports a read-only net dir and damages nothing", async () => {
      host = new AgentHarness();
      writeFileSync(host.path("10-calico.conflist"), calico());
      const readOnly = isRoot
        ? () => execFileSync("sh", ["-c", `mount --bind '${host.netDir}' '${host.netDir}' && mount -o remount,bind,ro '${host.netDir}'`])
        : () => chmodSync(host.netDir, 0o555);
      readOnly();
      try {
        await host.start();
        await host.waitFor(() => host.logs.some((line) => line.level === "error"));
        expect((await host.readyz()).status).toBe(503);
        expect(host.read("10-calico.conflist")).toBe(calico());
        expect(readdirSync(host.netDir)).toEqual(["10-calico.conflist"]);
      } finally {
        if (isRoot) execFileSync("umount", [host.netDir]);
        else chmodSync(host.netDir, 0o755);
      }
    });

    it("reports a net dir it cannot read", async () => {
      host = new AgentHarness();
      await host.start(["--net-dir", "/does/not/exist"]);
      await host.waitFor(() => host.notReadyBecause("cannot read"));
      expect(ready().stdout).toContain("not ready");
    });

    it("refuses a conflist it cannot parse without touching it", async () => {
      await started({ "10-calico.conflist": "{ this is not json" });
      await host.waitFor(() => host.logs.some((line) => line.msg.includes("10-calico.conflist is not a valid CNI config")), 5000);
      expect(host.read("10-calico.conflist")).toBe("{ this is not json");
      expect((await host.readyz()).status).toBe(503);
    });

    it("reports an invalid first config as containerd sees it: the whole load fails, so not ready, naming it", async () => {
      await started({ "05-broken.conflist": "{", "10-calico.conflist": calico() }, ["--resync-seconds", "1"]);
      await host.waitFor(() => host.notReadyBecause("05-broken.conflist is not a valid CNI config"), 5000);
      expect(host.notReadyBecause("containerd fails to load the CNI config dir until it is fixed or removed")).toBe(true);
      expect(host.read("10-calico.conflist")).toBe(calico());
      expect(ready().stdout).toContain("05-broken.conflist is not a valid CNI config");
      // Past the half-written grace, logged once, not at every resync.
      const said = () => host.logs.filter((line) => line.msg.includes("05-broken.conflist is not a valid"));
      await host.waitFor(() => said().length > 0, 5000);
      // Two resyncs after it (one a second here), still one line.
      const saidAt = host.logs.indexOf(said()[0]!);
      await host.waitFor(() => host.logs.slice(saidAt).filter((line) => line.msg === "reconcile").length >= 2, 5000);
      expect(said()).toHaveLength(1);
    });

    it("writes no kubeconfig from an empty token: not ready, saying so once", async () => {
      host = new AgentHarness();
      writeFileSync(host.path("10-calico.conflist"), calico());
      host.rotateToken("");
      await host.start();
      await host.waitFor(() => host.notReadyBecause(`the service account token ${host.serviceAccountDir}/token is empty`), 5000);
      // The reasons name host paths: they go to the log and `meshcni ready`, never to whoever can reach the port; the cause's word does.
      expect(await host.readyz()).toEqual({ status: 503, body: "not ready: NoKubeconfig\n" });
      expect(ready().stdout).toContain(`${host.serviceAccountDir}/token is empty`);
      expect(host.kubeconfig()).toBe("");
      expect(ready().status).toBe(1);
      expect(host.logs.filter((line) => line.msg.includes("token") && line.msg.includes("is empty"))).toHaveLength(1);
    });
  });
});

describe("meshcni install: settings it refuses", () => {
  it("documents Linkerd's environment variables", () => {
    const help = execFileSync(meshcniBinary, ["install", "--help"], { encoding: "utf8" });
    for (const name of ["DEST_CNI_NET_DIR", "DEST_CNI_BIN_DIR", "CNI_NETWORK_CONFIG", "KUBECONFIG_FILE_NAME"]) expect(help).toContain(name);
  });

  it.each([
    ["--bogus"],
    ["--listen", "localhost"],
    ["--repair", "delete"],
    ["--audit-seconds", "soon"],
    ["--log-level", "verbose"],
    ["--log-level", "warning!"],
  ])("refuses %j with one line and exit 2, before installing anything", (...flags) => {
    const probe = new AgentHarness();
    try {
      const result = spawnSync(meshcniBinary, ["install", ...probe.args(flags)], { env: probe.env, encoding: "utf8" });
      expect(result.status).toBe(2);
      expect(result.stderr.trim().split("\n")).toHaveLength(1);
      expect(result.stderr).toMatch(/^meshcni install: .*\(see meshcni install --help\)$/m);
      expect(readdirSync(probe.binDir)).toEqual([]);
      expect(readdirSync(probe.netDir)).toEqual([]);
    } finally {
      void probe.cleanup();
    }
  });

  it("refuses an invalid LOG_LEVEL the same way", () => {
    const probe = new AgentHarness();
    try {
      const result = spawnSync(meshcniBinary, ["install", ...probe.args()], { env: { ...probe.env, LOG_LEVEL: "loud" }, encoding: "utf8" });
      expect([result.status, result.stderr]).toEqual([
        2,
        'meshcni install: --log-level must be one of debug, info, warn, error, not "loud" (see meshcni install --help)\n',
      ]);
    } finally {
      void probe.cleanup();
    }
  });

  it("exits 1 with one line when it cannot listen (the address is taken), before installing anything", async () => {
    const probe = new AgentHarness();
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    try {
      writeFileSync(probe.path("10-calico.conflist"), calico());
      const port = (taken.address() as AddressInfo).port;
      const result = spawnSync(meshcniBinary, ["install", ...probe.args(["--listen", `127.0.0.1:${port}`])], {
        env: probe.env,
        encoding: "utf8",
      });
      expect(result.status).toBe(1);
      const lines = result.stderr
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as { level: string; msg: string });
      expect(lines).toEqual([
        expect.objectContaining({ level: "error", msg: expect.stringContaining(`cannot listen on 127.0.0.1:${port} (--listen)`) }),
      ]);
      expect(lines[0]!.msg).toContain("in use");
      expect(readdirSync(probe.binDir)).toEqual([]);
      expect(probe.read("10-calico.conflist")).toBe(calico());
    } finally {
      taken.close();
      void probe.cleanup();
    }
  });
});
