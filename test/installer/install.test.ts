import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import packageJson from "../../package.json" with { type: "json" };
import { createAgentMetrics } from "../../src/agent/metrics.js";
import { alertRules } from "../../src/manifests/alerts.js";
import { grafanaDashboard } from "../../src/manifests/dashboard.js";
import { AgentHarness } from "../kit/agent/harness.js";
import { calico, installerSuite } from "../kit/agent/installer.js";
import { connectionsOf } from "../kit/api/connections.js";
import { meshcniBinary, promtoolBinary } from "../kit/paths.js";

describe("meshcni install", () => {
  const suite = installerSuite();
  const { started, chainedIn, ready } = suite;

  it("installs the binary and kubeconfig, chains into the active config, and reports ready", async () => {
    await started({ "10-calico.conflist": calico() });
    await suite.host.waitFor(chainedIn("10-calico.conflist"));
    expect(suite.host.types("10-calico.conflist")).toEqual(["calico", "portmap", "meshcni"]);
    const { plugins, ...rest } = suite.host.json("10-calico.conflist");
    const { plugins: originalPlugins, ...originalRest } = JSON.parse(calico());
    expect(rest).toEqual(originalRest);
    expect(plugins!.slice(0, 2)).toEqual(originalPlugins);
    expect(plugins![2]).toMatchObject({ kubernetes: { kubeconfig: "/etc/cni/net.d/ZZZ-meshcni-kubeconfig" } });
    expect(readFileSync(`${suite.host.binDir}/meshcni`).equals(readFileSync(meshcniBinary))).toBe(true);
    expect(statSync(`${suite.host.binDir}/meshcni`).mode & 0o777).toBe(0o755);
    await suite.host.waitFor(async () => (await suite.host.readyz()).status === 200);
    expect(statSync(suite.host.kubeconfigPath).mode & 0o777).toBe(0o600);
    // The plugin's kubeconfig holds a token minted for its own ServiceAccount, never the agent's.
    expect(suite.host.ownApi!.minted.get(suite.host.pluginToken())?.serviceAccount).toBe("meshcni/meshcni-plugin");
    expect(suite.host.kubeconfig()).not.toContain("token-one");
    expect(suite.host.kubeconfig()).toContain(`"server": "https://127.0.0.1:${suite.host.ownApi!.port}"`);
    expect(await suite.host.metric("meshcni_ready")).toBe(1);
    const healthz = await fetch(`http://${suite.host.address}/healthz`);
    expect([healthz.status, await healthz.text()]).toEqual([200, "ok\n"]);
    expect((await fetch(`http://${suite.host.address}/nothing`)).status).toBe(404);
    expect(ready().status).toBe(0);
    expect(suite.host.stderr.join("\n")).not.toContain("token-one");
  });

  it.each([
    ["flags", (template: string) => ({ args: ["--kubeconfig-name", "ZZZ-linkerd-cni-kubeconfig", "--template-file", template], env: {} })],
    [
      "Linkerd's environment",
      (template: string) => ({ args: [], env: { KUBECONFIG_FILE_NAME: "ZZZ-linkerd-cni-kubeconfig", CNI_NETWORK_CONFIG_FILE: template } }),
    ],
  ])("writes Linkerd's kubeconfig name and a template read from a file, given as %s", async (_how, given) => {
    suite.host = new AgentHarness();
    writeFileSync(suite.host.path("10-calico.conflist"), calico());
    const template = join(suite.host.root, "template.json");
    writeFileSync(
      template,
      JSON.stringify({ name: "meshcni", type: "meshcni", log_level: "warn", kubernetes: { kubeconfig: "__KUBECONFIG_FILEPATH__" } }),
    );
    const { args, env } = given(template);
    await suite.host.start(args, env);
    await suite.host.waitFor(chainedIn("10-calico.conflist"));
    expect(suite.host.json("10-calico.conflist").plugins!.at(-1)).toMatchObject({
      log_level: "warn",
      kubernetes: { kubeconfig: "/etc/cni/net.d/ZZZ-linkerd-cni-kubeconfig" },
    });
    await suite.host.waitFor(() => existsSync(suite.host.path("ZZZ-linkerd-cni-kubeconfig")));
    expect(existsSync(suite.host.kubeconfigPath)).toBe(false);
  });

  it("serves the metrics docs/observability.md lists, with their types and labels, and the process's own, each series with its node", async () => {
    await started({ "10-calico.conflist": calico() }, ["--node", "n1"]);
    await suite.host.waitFor(async () => (await suite.host.readyz()).status === 200);
    // Its requests and its three watches on one HTTP/2 connection, streams of it, as client-go's are.
    await suite.host.waitFor(() => connectionsOf(suite.host.ownApi!.requests, "agent").watched.length === 3);
    expect(connectionsOf(suite.host.ownApi!.requests, "agent").connections).toEqual([expect.stringMatching(/^HTTP\/2 #/)]);
    const text = await suite.host.scrape();
    // As Prometheus's own linter reads it: types, names, suffixes, help.
    expect(execFileSync(promtoolBinary, ["check", "metrics"], { input: text, encoding: "utf8" })).toBe("");
    const served = Object.fromEntries([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((match) => [match[1], match[2]]));
    // Every series the alerts and the dashboard read is one the agent serves.
    const queries = JSON.stringify([alertRules.map((rule) => rule.expr), grafanaDashboard()]);
    for (const [name] of queries.matchAll(/\b(?:meshcni|process)_[a-z_]+/g))
      expect(served, name).toHaveProperty(name.replace(/_bucket$/, ""));
    const observability = readFileSync(join(import.meta.dirname, "../../docs/observability.md"), "utf8");
    const rows = [...observability.matchAll(/^\| `(meshcni_[a-z_]+)` +\| (\w+) +\| ([^|]*)\|/gm)];
    const documented = Object.fromEntries(rows.map((row) => [row[1], row[2]]));
    expect(Object.keys(documented).length).toBeGreaterThanOrEqual(9);
    expect(Object.fromEntries(Object.entries(served).filter(([name]) => name.startsWith("meshcni_")))).toEqual(documented);
    const processMetrics = /and the process's own \(([^)]*)\)/.exec(observability)![1]!.match(/`[a-z_]+`/g)!;
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
    // The labels docs/observability.md names are the ones each metric declares (whether it has a series yet or not), and the ones served.
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

  it("uninstalls on SIGTERM outside a pod: every config restored in meaning, kubeconfig, binary and state dir removed, exit 0", async () => {
    const bridge = { cniVersion: "1.0.0", name: "mynet", type: "bridge" };
    await started({ "10-calico.conflist": calico() });
    await suite.host.waitFor(chainedIn("10-calico.conflist"));
    writeFileSync(suite.host.path("05-mynet.conf"), JSON.stringify(bridge));
    await suite.host.waitFor(chainedIn("05-mynet.conflist"));
    mkdirSync(join(suite.host.stateDir, "attachments"), { recursive: true });
    // Set aside with the entry in it, as Cilium's cni.exclusive renames the others: the entry is taken out too.
    const backup = JSON.stringify({ ...JSON.parse(calico()), plugins: [...JSON.parse(calico()).plugins, { type: "meshcni" }] });
    writeFileSync(suite.host.path("20-old.conflist.cilium_bak"), backup);
    expect(await suite.host.stop("SIGTERM")).toBe(0);
    expect(suite.host.json("10-calico.conflist")).toEqual(JSON.parse(calico()));
    expect(suite.host.json("05-mynet.conflist")).toEqual({ cniVersion: "1.0.0", name: "mynet", plugins: [bridge] });
    expect(suite.host.json("20-old.conflist.cilium_bak")).toEqual(JSON.parse(calico()));
    expect(readdirSync(suite.host.netDir).sort()).toEqual(["05-mynet.conflist", "10-calico.conflist", "20-old.conflist.cilium_bak"]);
    expect(readdirSync(suite.host.binDir)).toEqual([]);
    expect(existsSync(suite.host.stateDir)).toBe(false);
    expect(suite.host.logs.find((line) => line.msg === "uninstalled")?.why).toContain("not running in a pod");
  });

  it("keeps everything on SIGTERM with --on-stop keep; meshcni uninstall, run by hand with its flags, takes it off after", async () => {
    await started({ "10-calico.conflist": calico() }, ["--on-stop", "keep"]);
    await suite.host.waitFor(async () => (await suite.host.readyz()).status === 200);
    const kubeconfig = suite.host.kubeconfig();
    expect(await suite.host.stop("SIGINT")).toBe(0);
    expect(suite.host.types("10-calico.conflist").at(-1)).toBe("meshcni");
    expect(readdirSync(suite.host.binDir)).toEqual(["meshcni"]);
    expect(suite.host.kubeconfig()).toBe(kubeconfig);
    // As an operator does once the agent kept a node it was uninstalled from ("cannot tell whether the DaemonSet stays").
    const uninstall = spawnSync(meshcniBinary, ["uninstall", ...suite.host.args()], { env: suite.host.env, encoding: "utf8" });
    expect(uninstall.status, uninstall.stderr).toBe(0);
    expect(uninstall.stdout).toContain(`removed meshcni's entry from ${suite.host.path("10-calico.conflist")}`);
    expect(suite.host.json("10-calico.conflist")).toEqual(JSON.parse(calico()));
    expect(readdirSync(suite.host.binDir)).toEqual([]);
    expect(existsSync(suite.host.kubeconfigPath)).toBe(false);
    expect(existsSync(suite.host.stateDir)).toBe(false);
  });

  it("restarts idempotently: no rewrite of the binary or the config", async () => {
    await started({ "10-calico.conflist": calico() }, ["--on-stop", "keep"]);
    await suite.host.waitFor(chainedIn("10-calico.conflist"));
    await suite.host.waitFor(async () => (await suite.host.readyz()).status === 200);
    expect(await suite.host.stop()).toBe(0);
    writeFileSync(suite.host.path("10-calico.conflist"), calico());
    await suite.host.start();
    await suite.host.waitFor(chainedIn("10-calico.conflist"));
    const before = {
      binary: statSync(`${suite.host.binDir}/meshcni`).mtimeMs,
      config: statSync(suite.host.path("10-calico.conflist")).mtimeMs,
    };
    await suite.host.stop("SIGKILL");
    await suite.host.start();
    await suite.host.waitFor(async () => (await suite.host.readyz()).status === 200);
    expect(statSync(`${suite.host.binDir}/meshcni`).mtimeMs).toBe(before.binary);
    expect(statSync(suite.host.path("10-calico.conflist")).mtimeMs).toBe(before.config);
    expect(suite.host.logs.filter((line) => line.msg === "binary already installed")).toHaveLength(2);
  });

  it("meshcni ready gives the agent's verdict, and no agent answering is not ready", async () => {
    await started({ "10-calico.conflist": calico() });
    await suite.host.waitFor(async () => (await suite.host.readyz()).status === 200);
    // With the agent's flags: the verdict is its /readyz.
    expect(ready()).toMatchObject({ status: 0, stdout: "ready: meshcni is chained in 10-calico.conflist\n" });
    const address = suite.host.address;
    await suite.host.stop();
    const refused = spawnSync(meshcniBinary, ["ready", ...suite.host.args(["--listen", address])], {
      env: suite.host.env,
      encoding: "utf8",
    });
    expect(refused.status).toBe(1);
    expect(refused.stdout).toContain(`not ready: no agent answers at http://${address}/readyz`);
  });
});
