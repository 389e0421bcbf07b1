import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { compareVersions, supportedVersions } from "../../src/cni/version.js";
import { FakeApiServer, podObject } from "../kit/api/server.js";
import { components } from "../kit/cluster/teardown.js";
import { podArgs } from "../kit/common.js";
import { TestNetwork } from "../kit/netns/network.js";
import { natRules, resultAddress } from "../kit/netns/plugin-process.js";
import { describeAsRoot } from "../kit/root-suites.js";

/**
 * Every CNI version meshcni says it supports (src/cni/version.ts), each through cnitool
 * in a chain of that version, as containernetworking's own integration tests loop over
 * theirs. cnitool and the primary's plugins are the libcni and plugins containerd 2 is
 * built with (build/cluster/components.sh's cni-plugins: libcni 1.3, plugins 1.10), so
 * 1.1.0's STATUS and GC go through libcni too; Debian's (libcni 1.1) stop at 1.0.0.
 */
describeAsRoot("every CNI version meshcni supports, through cnitool", () => {
  const api = new FakeApiServer();
  let net: TestNetwork;
  let client = "";
  const args = podArgs("demo", "web");
  const attachments = () => {
    const dir = join(net.stateDir, "attachments");
    return existsSync(dir) ? readdirSync(dir).filter((name) => name.endsWith(".json")) : [];
  };

  beforeAll(async () => {
    const built = (await components())["cni-plugins"];
    net = new TestNetwork(12, { cni: { cnitool: join(built, "cnitool"), plugins: built } });
    await api.start();
    api.addPod(podObject("demo", "web", { proxy: "container" }));
    const kubeconfig = api.writeKubeconfig();
    for (const version of supportedVersions)
      net.writeConflist(`mesh-${version}`, { kubernetes: { kubeconfig }, linkerd: { "iptables-mode": "nft" } }, version);
    client = await net.addNetns("client");
    await net.cnitool("add", "mesh-1.0.0", client);
  });

  afterAll(async () => {
    await net?.cleanup();
    await api.stop();
  });

  it.each(supportedVersions)(
    "%s: ADD redirects a meshed pod and hands the bridge's result on in that version; CHECK (0.4.0 on) passes; DEL removes it",
    async (version) => {
      const network = `mesh-${version}`;
      const pod = await net.addNetns(`v${version.replaceAll(".", "")}`);
      const added = await net.cnitool("add", network, pod, args);
      expect(added.exitCode, added.stdout + added.stderr).toBe(0);
      expect(added.json).toMatchObject({ cniVersion: version, ips: [{ address: expect.stringMatching(/^10\.251\.12\./) }] });
      expect(await natRules(pod, "nft")).toContain(
        '-A PROXY_INIT_REDIRECT -p tcp -m comment --comment "proxy-init/redirect-all-incoming-to-proxy-port" -j REDIRECT --to-ports 4143',
      );
      await net.serve(pod, { 4143: "proxy-inbound", 8080: "app" });
      expect(await net.connect(client, resultAddress(added), 8080)).toBe("proxy-inbound");
      expect(attachments()).toHaveLength(1);
      // CHECK came with 0.4.0: libcni refuses it for an older chain before any plugin runs.
      if (compareVersions(version, "0.4.0") >= 0) {
        const checked = await net.cnitool("check", network, pod, args);
        expect(checked.exitCode, checked.stdout + checked.stderr).toBe(0);
      }
      const deleted = await net.cnitool("del", network, pod, args);
      expect(deleted.exitCode, deleted.stdout + deleted.stderr).toBe(0);
      expect(await natRules(pod, "nft")).toEqual([]);
      expect(attachments()).toEqual([]);
    },
  );

  it("1.1.0: STATUS through libcni answers ready; GC deletes what the runtime no longer has, rules and record", async () => {
    const status = await net.cnitool("status", "mesh-1.1.0", client);
    expect(status.exitCode, status.stdout + status.stderr).toBe(0);
    const pod = await net.addNetns("gc");
    expect((await net.cnitool("add", "mesh-1.1.0", pod, args)).exitCode).toBe(0);
    expect(attachments()).toHaveLength(1);
    // cnitool's GC names no attachment valid: libcni DELs every one it has cached for the network, then sends GC.
    const collected = await net.cnitool("gc", "mesh-1.1.0", pod);
    expect(collected.exitCode, collected.stdout + collected.stderr).toBe(0);
    expect(await natRules(pod, "nft")).toEqual([]);
    expect(attachments()).toEqual([]);
  });
});
