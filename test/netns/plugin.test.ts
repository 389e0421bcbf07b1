import { readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeApiServer, podObject } from "../kit/api/server.js";
import { deleteLoopbackRule, iptables, meshcniNetconf, podArgs } from "../kit/common.js";
import { TestNetwork } from "../kit/netns/network.js";
import { invokePlugin, natRules, resultAddress } from "../kit/netns/plugin-process.js";
import { describeAsRoot } from "../kit/root-suites.js";

/** What iptables-save shows after ADD for a pod skipping outbound 9091 (Linkerd's layout). */
const expectedRules = [
  ":PROXY_INIT_OUTPUT - [0:0]",
  ":PROXY_INIT_REDIRECT - [0:0]",
  '-A PREROUTING -m comment --comment "proxy-init/install-proxy-init-prerouting" -j PROXY_INIT_REDIRECT',
  '-A OUTPUT -m comment --comment "proxy-init/install-proxy-init-output" -j PROXY_INIT_OUTPUT',
  '-A PROXY_INIT_OUTPUT -m owner --uid-owner 2102 -m comment --comment "proxy-init/ignore-proxy-user-id" -j RETURN',
  '-A PROXY_INIT_OUTPUT -o lo -m comment --comment "proxy-init/ignore-loopback" -j RETURN',
  '-A PROXY_INIT_OUTPUT -p tcp -m multiport --dports 9091 -m comment --comment "proxy-init/ignore-port-9091" -j RETURN',
  '-A PROXY_INIT_OUTPUT -p tcp -m comment --comment "proxy-init/redirect-all-outgoing-to-proxy-port" -j REDIRECT --to-ports 4140',
  '-A PROXY_INIT_REDIRECT -p tcp -m multiport --dports 4191,4190 -m comment --comment "proxy-init/ignore-port-4191,4190" -j RETURN',
  '-A PROXY_INIT_REDIRECT -p tcp -m comment --comment "proxy-init/redirect-all-incoming-to-proxy-port" -j REDIRECT --to-ports 4143',
];

for (const backend of ["nft", "legacy"] as const) {
  describeAsRoot(`meshcni through cnitool, ${backend} backend`, () => {
    const api = new FakeApiServer();
    const net = new TestNetwork(backend === "nft" ? 10 : 11);
    let kubeconfig = "";
    let client = "";
    let clientIp = "";

    beforeAll(async () => {
      await api.start();
      kubeconfig = api.writeKubeconfig();
      api.addPod(podObject("demo", "web", { proxy: "container", annotations: { "config.linkerd.io/skip-outbound-ports": "9091" } }));
      api.addPod(podObject("demo", "sidecar", { proxy: "native-sidecar" }));
      api.addPod(podObject("demo", "plain"));
      api.addPod(podObject("demo", "with-init", { proxy: "container", init: true }));
      net.writeConflist("mesh", { kubernetes: { kubeconfig }, linkerd: { "iptables-mode": backend } });
      client = await net.addNetns("client");
      clientIp = resultAddress(await net.cnitool("add", "mesh", client));
      await net.serve(client, { 9090: "real-server", 9091: "real-server-skipped" });
    });

    afterAll(async () => {
      await net.cleanup();
      await api.stop();
    });

    describe("a meshed pod", () => {
      let pod = "";
      let podIp = "";
      const webArgs = `${podArgs("demo", "web")};K8S_POD_INFRA_CONTAINER_ID=abc`;

      beforeAll(async () => {
        pod = await net.addNetns("web");
        const added = await net.cnitool("add", "mesh", pod, webArgs);
        expect(added.exitCode, added.stderr + added.stdout).toBe(0);
        podIp = resultAddress(added);
        await net.serve(pod, { 4143: "proxy-inbound", 4140: "proxy-outbound", 8080: "app" });
      });

      it("writes the planned rules, exactly", async () => {
        expect(await natRules(pod, backend)).toEqual(expectedRules);
      });

      it("redirects inbound TCP to the proxy's inbound port", async () => {
        expect(await net.connect(client, podIp, 8080)).toBe("proxy-inbound");
      });

      it("redirects the app's outbound TCP to the proxy's outbound port", async () => {
        expect(await net.connect(pod, clientIp, 9090, 1000)).toBe("proxy-outbound");
      });

      it("lets the proxy's own UID through to the real server", async () => {
        expect(await net.connect(pod, clientIp, 9090, 2102)).toBe("real-server");
      });

      it("lets a skip-outbound port and loopback bypass the proxy", async () => {
        expect(await net.connect(pod, clientIp, 9091, 1000)).toBe("real-server-skipped");
        expect(await net.connect(pod, "127.0.0.1", 8080, 1000)).toBe("app");
      });

      it("passes CHECK, and ADD again leaves one copy", async () => {
        expect((await net.cnitool("check", "mesh", pod, webArgs)).exitCode).toBe(0);
        const again = await invokePlugin(
          { CNI_COMMAND: "ADD", CNI_CONTAINERID: "again", CNI_NETNS: net.netnsPath(pod), CNI_IFNAME: "eth0", CNI_ARGS: webArgs },
          meshcniNetconf({ stateDir: net.stateDir, kubeconfig, linkerd: { "iptables-mode": backend } }),
        );
        expect(again.exitCode, again.stdout).toBe(0);
        expect(again.json).toEqual({ cniVersion: "1.0.0" });
        expect(await natRules(pod, backend)).toEqual(expectedRules);
      });

      it.each([
        [
          "OUTPUT",
          "-p tcp -m tcp --dport 9090 -j RETURN",
          "to PROXY_INIT_OUTPUT",
          () => net.connect(pod, clientIp, 9090, 1000),
          "real-server",
        ],
        ["PREROUTING", "-p tcp -m tcp --dport 8080 -j ACCEPT", "to PROXY_INIT_REDIRECT", () => net.connect(client, podIp, 8080), "app"],
      ])(
        "fails CHECK when a rule placed before the jump in %s (%s) lets TCP bypass the proxy, naming it",
        async (chain, rule, jump, connect, reached) => {
          await iptables(pod, backend, "-I", chain, "1", ...rule.split(" "));
          try {
            // The bypass is real: the connection reaches the app or the server, not the proxy.
            expect(await connect()).toBe(reached);
            const checked = await net.cnitool("check", "mesh", pod, webArgs);
            expect(checked.exitCode).not.toBe(0);
            expect(checked.stdout + checked.stderr).toContain(
              `ipv4: ${chain}: a rule before the jump ${jump} lets traffic bypass the proxy: ${rule}`,
            );
          } finally {
            await iptables(pod, backend, "-D", chain, ...rule.split(" "));
          }
        },
      );

      it("passes CHECK with rules that cannot bypass the proxy: a LOG before the jump, a RETURN after it", async () => {
        const log = ["OUTPUT", "-p", "tcp", "-m", "tcp", "--dport", "9090", "-j", "LOG"];
        const after = ["OUTPUT", "-p", "tcp", "-m", "tcp", "--dport", "9090", "-j", "RETURN"];
        await iptables(pod, backend, "-I", log[0]!, "1", ...log.slice(1));
        await iptables(pod, backend, "-A", ...after);
        try {
          const checked = await net.cnitool("check", "mesh", pod, webArgs);
          expect(checked.exitCode, checked.stdout).toBe(0);
          expect(await net.connect(pod, clientIp, 9090, 1000)).toBe("proxy-outbound");
        } finally {
          await iptables(pod, backend, "-D", ...log);
          await iptables(pod, backend, "-D", ...after);
        }
      });

      it("fails CHECK after a rule is deleted by hand, naming the rule", async () => {
        await deleteLoopbackRule(pod, backend);
        const checked = await net.cnitool("check", "mesh", pod, webArgs);
        expect(checked.exitCode).not.toBe(0);
        expect(checked.stdout + checked.stderr).toContain("PROXY_INIT_OUTPUT: missing rule: -o lo");
      });

      it("DEL removes every rule, and DEL twice succeeds", async () => {
        expect((await net.cnitool("del", "mesh", pod, webArgs)).exitCode).toBe(0);
        expect(await natRules(pod, backend)).toEqual([]);
        expect((await net.cnitool("del", "mesh", pod, webArgs)).exitCode).toBe(0);
      });

      it("DEL takes out the jumps others added into meshcni's chains, leaves every other rule, and iptables still writes the table", async () => {
        const other = await net.addNetns("others");
        expect((await net.cnitool("add", "mesh", other, webArgs)).exitCode).toBe(0);
        await iptables(other, backend, "-A", "OUTPUT", "-p", "udp", "-j", "RETURN");
        await iptables(other, backend, "-I", "PREROUTING", "1", "-s", "10.9.0.0/16", "-j", "PROXY_INIT_REDIRECT");
        await iptables(other, backend, "-N", "SIDECAR");
        await iptables(other, backend, "-A", "SIDECAR", "-p", "tcp", "-g", "PROXY_INIT_OUTPUT");
        await iptables(other, backend, "-A", "SIDECAR", "-p", "udp", "-j", "RETURN");
        const deleted = await net.cnitool("del", "mesh", other, webArgs);
        expect(deleted.exitCode, deleted.stdout + deleted.stderr).toBe(0);
        expect(await natRules(other, backend)).toEqual(["-A OUTPUT -p udp -j RETURN", "-A SIDECAR -p udp -j RETURN"]);
        await iptables(other, backend, "-A", "SIDECAR", "-p", "tcp", "-j", "RETURN");
        expect((await net.cnitool("add", "mesh", other, webArgs)).exitCode).toBe(0);
        expect(await natRules(other, backend)).toEqual(expect.arrayContaining([...expectedRules, "-A SIDECAR -p tcp -j RETURN"]));
        await net.removeNetns(other);
      });

      it("DEL succeeds once the netns is gone", async () => {
        const gone = await net.addNetns("gone");
        expect((await net.cnitool("add", "mesh", gone, webArgs)).exitCode).toBe(0);
        await net.removeNetns(gone);
        const deleted = await net.cnitool("del", "mesh", gone, webArgs);
        expect(deleted.exitCode, deleted.stdout + deleted.stderr).toBe(0);
      });

      it("DEL after an uninstall emptied the state dir removes the rules and puts nothing back in it", async () => {
        const late = await net.addNetns("late");
        expect((await net.cnitool("add", "mesh", late, webArgs)).exitCode).toBe(0);
        expect(readdirSync(net.stateDir)).toContain("locks");
        // What the agent's uninstall leaves: the dir (its hostPath mount) with nothing in it.
        for (const name of readdirSync(net.stateDir)) rmSync(join(net.stateDir, name), { recursive: true });
        const deleted = await net.cnitool("del", "mesh", late, webArgs);
        expect(deleted.exitCode, deleted.stdout + deleted.stderr).toBe(0);
        expect(await natRules(late, backend)).toEqual([]);
        expect(readdirSync(net.stateDir)).toEqual([]);
        await net.removeNetns(late);
      });
    });

    describe.each([
      ["a pod without the proxy", "plain"],
      ["a pod whose linkerd-init programs iptables itself", "with-init"],
    ])("%s", (_title, name) => {
      it("gets no rules, and traffic reaches the real ports", async () => {
        const pod = await net.addNetns(name);
        const args = podArgs("demo", name);
        const added = await net.cnitool("add", "mesh", pod, args);
        expect(added.exitCode, added.stderr).toBe(0);
        await net.serve(pod, { 4143: "proxy-inbound", 8080: "app" });
        expect(await natRules(pod, backend)).toEqual([]);
        expect(await net.connect(client, resultAddress(added), 8080)).toBe("app");
        expect((await net.cnitool("check", "mesh", pod, args)).exitCode).toBe(0);
      });
    });

    it("works in a chain of cniVersion 0.4.0, passing the bridge's result through in that version", async () => {
      net.writeConflist("mesh-040", { kubernetes: { kubeconfig }, linkerd: { "iptables-mode": backend } }, "0.4.0");
      const pod = await net.addNetns("v040");
      const args = podArgs("demo", "web");
      const added = await net.cnitool("add", "mesh-040", pod, args);
      expect(added.exitCode, added.stdout + added.stderr).toBe(0);
      expect(added.json).toMatchObject({ cniVersion: "0.4.0", ips: [{ version: "4", address: expect.stringMatching(/^10\.251\./) }] });
      expect(await natRules(pod, backend)).toEqual(expectedRules);
      expect((await net.cnitool("check", "mesh-040", pod, args)).exitCode).toBe(0);
      expect((await net.cnitool("del", "mesh-040", pod, args)).exitCode).toBe(0);
      expect(await natRules(pod, backend)).toEqual([]);
    });

    it("redirects a pod whose proxy is a native sidecar", async () => {
      const pod = await net.addNetns("sidecar");
      const added = await net.cnitool("add", "mesh", pod, podArgs("demo", "sidecar"));
      expect(added.exitCode, added.stderr).toBe(0);
      await net.serve(pod, { 4143: "proxy-inbound", 8080: "app" });
      expect(await net.connect(client, resultAddress(added), 8080)).toBe("proxy-inbound");
    });
  });
}
