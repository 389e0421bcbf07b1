import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { AgentHarness } from "../kit/agent/harness.js";
import { calico } from "../kit/agent/installer.js";
import { FakeApiServer, podObject } from "../kit/api/server.js";

describe("meshcni install: its API and its pod", () => {
  let host: AgentHarness;
  afterEach(async () => host?.cleanup());

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

    /** Every token of meshcni's refused (401): its ServiceAccounts deleted, or the signing key rotated without the old one kept. */
    const refuseEveryToken = () => {
      api.agentTokens.clear();
      api.minted.clear();
    };
    /** The agent started in its DaemonSet's pod, ready and watching its ServiceAccount (never the DaemonSet). */
    const startWatchingAccount = async () => {
      api.addDaemonSet("meshcni", "meshcni");
      host = new AgentHarness();
      writeFileSync(host.path("10-calico.conflist"), calico());
      await host.startWithApi(api, [], self);
      await host.waitFor(async () => (await host.readyz()).status === 200 && api.watches.openNow("ServiceAccount") > 0);
      expect(api.watches.opened.DaemonSet).toBe(0);
    };

    it("its ServiceAccounts deleted with its DaemonSet (every request 401 by its stop): the deletion seen on its watch, it uninstalls", async () => {
      await startWatchingAccount();
      api.deleteDaemonSet("meshcni", "meshcni");
      api.deleteServiceAccount("meshcni", "meshcni-plugin");
      api.deleteServiceAccount("meshcni", "meshcni");
      await host.waitFor(() => host.logs.some((line) => line.msg.startsWith("the agent's ServiceAccount is deleted")));
      try {
        expect(await host.stop()).toBe(0);
      } finally {
        api.addServiceAccount("meshcni", "meshcni");
      }
      expect(host.logs.find((line) => line.msg === "uninstalled")?.why).toBe("the agent's ServiceAccount was deleted (its watch said so)");
      expect(host.types("10-calico.conflist")).toEqual(["calico", "portmap"]);
      expect(readdirSync(host.binDir)).toEqual([]);
    });

    it("every token refused and no deletion seen (a signing key rotated, the old one dropped): keeps everything", async () => {
      await startWatchingAccount();
      refuseEveryToken();
      try {
        expect(await host.stop()).toBe(0);
      } finally {
        api.agentTokens.add(api.agentToken);
      }
      expect(host.logs.find((line) => line.msg.startsWith("stopping; meshcni stays"))?.why).toMatch(/refused \(401\).*signing key rotated/);
      expect(host.types("10-calico.conflist").at(-1)).toBe("meshcni");
      expect(readdirSync(host.binDir)).toEqual(["meshcni"]);
      expect(host.kubeconfig()).not.toBe("");
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
});
