import { readdirSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { AgentHarness } from "../kit/agent/harness.js";
import { conflist, primaryBinDir } from "../kit/agent/host.js";
import { calico, installerSuite } from "../kit/agent/installer.js";
import { FakeApiServer } from "../kit/api/server.js";
import { sleep } from "../kit/common.js";

describe("meshcni install: keeping itself chained", () => {
  const suite = installerSuite();
  const { started, chainedIn, ready } = suite;

  it("re-chains after an in-place rewrite (Calico), a rename over (AWS VPC CNI), and a delete and recreate", async () => {
    await started({ "10-calico.conflist": calico() });
    await suite.host.waitFor(chainedIn("10-calico.conflist"));
    suite.host.writeInPlace("10-calico.conflist", calico(2));
    await suite.host.waitFor(chainedIn("10-calico.conflist"));
    expect(suite.host.json("10-calico.conflist").plugins![0]).toMatchObject({ revision: 2 });
    suite.host.renameOver("10-calico.conflist", calico(3));
    await suite.host.waitFor(chainedIn("10-calico.conflist"));
    expect(suite.host.json("10-calico.conflist").plugins![0]).toMatchObject({ revision: 3 });
    suite.host.remove("10-calico.conflist");
    await suite.host.waitFor(async () => (await suite.host.readyz()).status === 503);
    expect(ready().status).toBe(1);
    writeFileSync(suite.host.path("10-calico.conflist"), calico(4));
    await suite.host.waitFor(chainedIn("10-calico.conflist"));
    expect(await suite.host.metric('meshcni_rechains_total{cause="entry_removed"}')).toBe(3);
    expect(await suite.host.metric("meshcni_rechain_duration_seconds_count")).toBe(3);
    expect(await suite.host.metric("meshcni_rechain_duration_seconds_sum")).toBeGreaterThan(0);
    await suite.host.waitFor(async () => (await suite.host.readyz()).status === 200);
  });

  it("moves to a new earlier-sorting config (Cilium arriving) and leaves the old one as it was", async () => {
    await started({ "10-calico.conflist": calico() });
    await suite.host.waitFor(chainedIn("10-calico.conflist"));
    const cilium = conflist("cilium", [{ type: "cilium-cni", enable_debug: false }]);
    writeFileSync(suite.host.path("05-cilium.conflist"), cilium);
    await suite.host.waitFor(chainedIn("05-cilium.conflist"));
    await suite.host.waitFor(() => suite.host.types("10-calico.conflist").length === 2);
    expect(suite.host.json("10-calico.conflist")).toEqual(JSON.parse(calico()));
    expect(suite.host.types("05-cilium.conflist")).toEqual(["cilium-cni", "meshcni"]);
    expect(await suite.host.metric('meshcni_rechains_total{cause="active_config_changed"}')).toBe(1);
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
    await suite.host.waitFor(chainedIn("10-mynet.conflist"));
    await suite.host.waitFor(() => !readdirSync(suite.host.netDir).includes("10-mynet.conf"));
    const wrapped = suite.host.json("10-mynet.conflist");
    expect(wrapped).toMatchObject({ cniVersion: "0.4.0", name: "mynet" });
    expect(wrapped.plugins![0]).toEqual(bridge);
  });

  it("touches only the active config when two agents' files are there", async () => {
    const other = conflist("other", [{ type: "macvlan", master: "eth0" }]);
    await started({ "10-calico.conflist": calico(), "20-other.conflist": other, "README.txt": "not a config" });
    await suite.host.waitFor(chainedIn("10-calico.conflist"));
    expect(suite.host.read("20-other.conflist")).toBe(other);
    expect(suite.host.read("README.txt")).toBe("not a config");
  });

  it("waits out a half-written foreign config instead of acting on it", async () => {
    await started({ "10-calico.conflist": calico() });
    await suite.host.waitFor(chainedIn("10-calico.conflist"));
    const cilium = conflist("cilium", [{ type: "cilium-cni" }]);
    suite.host.writeInPlace("05-cilium.conflist", cilium.slice(0, 40));
    // The agent saw it, and waits for the rest.
    await suite.host.waitFor(() =>
      suite.host.logs.some(
        (line) => line.msg === "the active config is not valid yet, retrying shortly" && String(line.file).endsWith("05-cilium.conflist"),
      ),
    );
    expect(suite.host.read("05-cilium.conflist")).toBe(cilium.slice(0, 40));
    expect(suite.host.types("10-calico.conflist").at(-1)).toBe("meshcni");
    suite.host.writeInPlace("05-cilium.conflist", cilium);
    await suite.host.waitFor(chainedIn("05-cilium.conflist"));
    await suite.host.waitFor(() => suite.host.types("10-calico.conflist").length === 2);
    expect(suite.host.stderr.some((line) => line.includes('"level":"error"'))).toBe(false);
  });

  it("replaces duplicate entries of its own with one, and leaves linkerd-cni's entry where it is, running and after its uninstall", async () => {
    // linkerd-cni installed beside meshcni, as an operator rolling back does (the safe order): its entry is linkerd-cni's.
    const linkerd = { name: "linkerd-cni", type: "linkerd-cni", linkerd: {} };
    const entries = [{ type: "calico" }, { type: "meshcni", old: 1 }, linkerd, { type: "meshcni", old: 2 }, { type: "portmap" }];
    await started({ "10-calico.conflist": conflist("k8s", entries) });
    await suite.host.waitFor(() => suite.host.types("10-calico.conflist").join() === "calico,linkerd-cni,portmap,meshcni");
    // Said once the file is written.
    await suite.host.waitFor(() => suite.host.logs.some((line) => line.msg.includes("duplicate")), 2000);
    expect(await suite.host.stop("SIGTERM")).toBe(0);
    expect(suite.host.json("10-calico.conflist")).toEqual(JSON.parse(conflist("k8s", [{ type: "calico" }, linkerd, { type: "portmap" }])));
  });

  it("backs off and warns, naming the file, when another agent keeps removing the entry", async () => {
    await started({ "05-cilium.conflist": conflist("cilium", [{ type: "cilium-cni" }]) });
    await suite.host.waitFor(chainedIn("05-cilium.conflist"));
    const started_ = performance.now();
    while (
      !suite.host.logs.some((line) => line.level === "warn" && line.msg.includes("keeps removing")) &&
      performance.now() - started_ < 5000
    ) {
      if (suite.host.types("05-cilium.conflist").includes("meshcni"))
        suite.host.renameOver("05-cilium.conflist", conflist("cilium", [{ type: "cilium-cni" }]));
      await sleep(5);
    }
    const warning = suite.host.logs.find((line) => line.level === "warn" && line.msg.includes("keeps removing"));
    expect(warning?.msg).toContain(suite.host.path("05-cilium.conflist"));
    expect(warning?.msg).toContain("cni.exclusive");
    expect(await suite.host.metric("meshcni_fights_total")).toBe(1);
    // Backing off (1 s first): a change to the file meanwhile is looked at, and left stripped.
    const heldFrom = suite.host.logs.length;
    suite.host.writeInPlace("05-cilium.conflist", conflist("cilium", [{ type: "cilium-cni" }]));
    await suite.host.waitFor(() => suite.host.logs.slice(heldFrom).some((line) => line.msg === "reconcile"), 900);
    expect(suite.host.types("05-cilium.conflist")).toEqual(["cilium-cni"]);
    await suite.host.waitFor(chainedIn("05-cilium.conflist"), 3000);
  });

  it("names a chain the runtime cannot run (portmap not installed): not ready, ChainBroken, the plugin's metric, and ready once it is", async () => {
    suite.host = new AgentHarness();
    const portmap = join(suite.host.hostRoot, primaryBinDir, "portmap");
    rmSync(portmap);
    writeFileSync(suite.host.path("10-calico.conflist"), calico());
    await suite.host.start(["--resync-seconds", "1"]);
    // meshcni chains all the same, so that the node is ready the moment the plugin is there.
    await suite.host.waitFor(chainedIn("10-calico.conflist"));
    const reason = `${suite.host.path("10-calico.conflist")} chains portmap, with no executable in ${suite.host.binDir} or ${join(suite.host.hostRoot, primaryBinDir)}: the runtime fails every pod's ADD and DEL on this node`;
    // Once the kubeconfig is written, the chain is all that is missing.
    const saidAlone = () => suite.host.logs.filter((line) => line.msg === "not ready" && String(line.reasons) === reason);
    await suite.host.waitFor(() => saidAlone().length > 0);
    expect(await suite.host.readyz()).toEqual({ status: 503, body: "not ready: ChainBroken\n" });
    expect(await suite.host.metric('meshcni_chain_missing_plugin{type="portmap"}')).toBe(1);
    expect(await suite.host.metric("meshcni_ready")).toBe(0);
    expect(ready()).toMatchObject({ status: 1, stdout: `not ready (ChainBroken): ${reason}\n` });
    // Said once, not at every resync: two resyncs after it, still one line.
    const saidAt = suite.host.logs.indexOf(saidAlone()[0]!);
    await suite.host.waitFor(() => suite.host.logs.slice(saidAt).filter((line) => line.msg === "reconcile").length >= 2, 5000);
    expect(saidAlone()).toHaveLength(1);
    writeFileSync(portmap, "#!/bin/sh\n", { mode: 0o755 });
    await suite.host.waitFor(async () => (await suite.host.readyz()).status === 200);
    expect(await suite.host.scrape()).not.toContain("meshcni_chain_missing_plugin{");
    expect(ready()).toMatchObject({ status: 0, stdout: "ready: meshcni is chained in 10-calico.conflist\n" });
  });

  it("follows a new primary that takes over (Cilium over azure-vnet), staying where the runtime may fall back until the new chain can run", async () => {
    suite.host = new AgentHarness();
    const ciliumBinary = join(suite.host.hostRoot, primaryBinDir, "cilium-cni");
    rmSync(ciliumBinary);
    writeFileSync(suite.host.path("10-azure.conflist"), conflist("azure", [{ type: "azure-vnet" }]));
    await suite.host.start();
    await suite.host.waitFor(async () => (await suite.host.readyz()).status === 200);
    // Cilium's config lands before its agent has installed its binary.
    writeFileSync(suite.host.path("05-cilium.conflist"), conflist("cilium", [{ type: "cilium-cni" }]));
    await suite.host.waitFor(chainedIn("05-cilium.conflist"));
    await suite.host.waitFor(async () => (await suite.host.readyz()).body === "not ready: ChainBroken\n");
    // CRI-O skips 05-cilium for 10-azure: meshcni stays there meanwhile.
    expect(suite.host.types("10-azure.conflist")).toEqual(["azure-vnet", "meshcni"]);
    expect(suite.host.logs.some((line) => line.msg === "chained meshcni into the next config as well")).toBe(false);
    // cni.exclusive sets the old primary's config aside; then Cilium's binary arrives.
    renameSync(suite.host.path("10-azure.conflist"), suite.host.path("10-azure.conflist.cilium_bak"));
    await suite.host.waitFor(() => suite.host.types("10-azure.conflist.cilium_bak").length === 1);
    writeFileSync(ciliumBinary, "#!/bin/sh\n", { mode: 0o755 });
    await suite.host.waitFor(async () => (await suite.host.readyz()).status === 200);
    expect(readdirSync(suite.host.netDir).sort()).toEqual(["05-cilium.conflist", "10-azure.conflist.cilium_bak", "ZZZ-meshcni-kubeconfig"]);
    expect(suite.host.json("10-azure.conflist.cilium_bak")).toEqual(JSON.parse(conflist("azure", [{ type: "azure-vnet" }])));
  });

  it("renews the plugin's minted token before it expires; the agent's own, even rotated, never touches the disk or the log", async () => {
    const api = await new FakeApiServer().start();
    try {
      // This server grants tokens 12 s whatever is asked: renewed at 80% (~9.6 s), never within 10 s of the last.
      api.maxTokenSeconds = 12;
      suite.host = new AgentHarness();
      writeFileSync(suite.host.path("10-calico.conflist"), calico());
      await suite.host.startWithApi(api, ["--plugin-token-seconds", "600"]);
      await suite.host.waitFor(() => suite.host.kubeconfig() !== "", 5000);
      const first = suite.host.pluginToken();
      expect(api.minted.get(first)?.serviceAccount).toBe("meshcni/meshcni-plugin");
      await suite.host.waitFor(() => suite.host.pluginToken() !== first, 15_000);
      expect(api.minted.get(suite.host.pluginToken())?.serviceAccount).toBe("meshcni/meshcni-plugin");
      // Logged once the file is written: the line may still be in the pipe when the file is seen.
      await suite.host.waitFor(() => suite.host.logs.some((line) => line.msg.includes("kubeconfig rewritten (a renewed token")), 2000);
      // kubelet rotates the agent's projected token: it keeps minting with the new one.
      api.agentTokens.add("token-two");
      suite.host.rotateToken("token-two");
      const second = suite.host.pluginToken();
      await suite.host.waitFor(() => suite.host.pluginToken() !== second, 15_000);
      const mints = api.requestsTo("POST", /\/serviceaccounts\/meshcni-plugin\/token$/);
      expect(mints.every((request) => request.who === "agent")).toBe(true);
      expect(statSync(suite.host.kubeconfigPath).mode & 0o777).toBe(0o600);
      expect(suite.host.kubeconfig()).not.toMatch(new RegExp(`${api.token}|token-two`));
      expect(suite.host.stderr.join("\n")).not.toMatch(new RegExp(`${api.token}|token-two|minted-`));
    } finally {
      await suite.host.cleanup();
      await api.stop();
    }
  });
});
