import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { aroundUnremoved } from "../../src/audit/repair.js";
import { FakeApiServer } from "../kit/api/server.js";
import { inNetnsCommand } from "../kit/common.js";
import { TestNetwork } from "../kit/netns/network.js";
import { meshcniBinary } from "../kit/paths.js";
import { describeAsRoot } from "../kit/root-suites.js";

/** Runs a command in a pod's netns, as a pod with NET_ADMIN there would. */
async function inPod(netns: string, ...command: string[]): Promise<void> {
  const [first, ...prefix] = inNetnsCommand(netns);
  await execa(first!, [...prefix, ...command]);
}

/**
 * A pod with NET_ADMIN in its own netns sends its TCP around its proxy without touching
 * meshcni's rules: untracked in the raw table (iptables-nft, as `iptables` is on Debian), or
 * by a chain of its own before conntrack. The audit must see it (issue 57's fourth finding):
 * the bypass is proven with real TCP first, then the audit's word on it.
 */
describeAsRoot("a redirect gone around by untracked TCP", () => {
  for (const [mode, index] of [
    ["nft", 62],
    ["nftables", 63],
  ] as const) {
    describe(`iptables-mode ${mode}`, () => {
      const api = new FakeApiServer();
      const net = new TestNetwork(index);
      let kubeconfig = "";
      let criSocket = "";
      const pod = { netns: "", ip: "" };
      let clientIp = "";
      const audit = async (...more: string[]) => {
        const dirs = ["--state-dir", net.stateDir, "--net-dir", net.confDir, "--cri-socket", criSocket];
        const args = ["audit", "--kubeconfig", kubeconfig, ...dirs, "--node", "node-a", "--output", "json", ...more];
        const result = await execa(meshcniBinary, args, { reject: false });
        type Found = { name: string; status: string; details: string[]; action?: string; result?: unknown };
        return (JSON.parse(result.stdout) as { pods: Found[] }).pods.find((found) => found.name === "app")!;
      };

      beforeAll(async () => {
        await api.start();
        kubeconfig = api.writeKubeconfig();
        criSocket = await net.criSocket();
        net.writeConflist("mesh", { kubernetes: { kubeconfig }, linkerd: { "iptables-mode": mode } });
        writeFileSync(join(net.confDir, "plain.conflist"), JSON.stringify(net.primaryConflist("plain")));
        Object.assign(pod, await net.startPod(api, { namespace: "shop", name: "app", network: "mesh", node: "node-a" }));
        const client = await net.startPod(api, { namespace: "shop", name: "client", network: "plain", node: "node-b" });
        clientIp = client.ip;
        await net.serve(pod.netns, { 4140: "proxy-outbound" });
        await net.serve(client.netns, { 9090: "real-server" });
      });

      afterAll(async () => {
        await net.cleanup();
        await api.stop();
      });

      it("is protected while its TCP goes through the proxy", async () => {
        expect(await net.connect(pod.netns, clientIp, 9090, 1000)).toBe("proxy-outbound");
        expect(await audit()).toMatchObject({ status: "protected", details: [] });
      });

      it("is drifted, naming the raw table's rule, once iptables' raw table leaves its TCP untracked", async () => {
        // Both ways: a reply tracked on its own would meet the inbound redirect.
        for (const chain of ["OUTPUT", "PREROUTING"])
          await inPod(pod.netns, "iptables-nft", "-t", "raw", "-A", chain, "-p", "tcp", "-j", "CT", "--notrack");
        expect(await net.connect(pod.netns, clientIp, 9090, 1000)).toBe("real-server");
        const found = await audit();
        expect(found.status).toBe("drifted");
        expect(found.details.sort()).toEqual(
          ["output", "prerouting"].map((hook) =>
            expect.stringMatching(
              new RegExp(
                `^ipv4: untracked TCP never reaches the redirect: table ip raw, filter at ${hook} priority -300, chain ${hook.toUpperCase()}: -p tcp .*nft:target-CT`,
              ),
            ),
          ),
        );
        // A redirect in place cannot mend it (the rules are not meshcni's to remove): said so, as a failure, with a Warning.
        const repaired = await audit("--repair", "redirect");
        expect(repaired).toMatchObject({ status: "drifted", action: "redirect", result: { failed: aroundUnremoved } });
        expect(api.events.at(-1)).toMatchObject({ type: "Warning", involvedObject: { name: "app" } });
        expect(await net.connect(pod.netns, clientIp, 9090, 1000)).toBe("real-server");
        await inPod(pod.netns, "iptables-nft", "-t", "raw", "-F");
        expect(await net.connect(pod.netns, clientIp, 9090, 1000)).toBe("proxy-outbound");
      });

      it("is drifted, naming the rule, once iptables-legacy's raw table (which nf_tables cannot list) leaves its TCP untracked", async () => {
        for (const chain of ["OUTPUT", "PREROUTING"])
          await inPod(pod.netns, "iptables-legacy", "-t", "raw", "-A", chain, "-p", "tcp", "-j", "CT", "--notrack");
        expect(await net.connect(pod.netns, clientIp, 9090, 1000)).toBe("real-server");
        const found = await audit();
        expect(found.status).toBe("drifted");
        expect(found.details.sort()).toEqual(
          ["OUTPUT", "PREROUTING"].map(
            (chain) => `ipv4: untracked TCP never reaches the redirect: iptables-legacy raw: -A ${chain} -p tcp -j CT --notrack`,
          ),
        );
        await inPod(pod.netns, "iptables-legacy", "-t", "raw", "-F");
        expect(await net.connect(pod.netns, clientIp, 9090, 1000)).toBe("proxy-outbound");
        expect(await audit()).toMatchObject({ status: "protected" });
      });

      it("is drifted, naming the rule, once a table of the pod's own leaves TCP untracked before conntrack", async () => {
        const chain = (name: string, hook: string, match: string) =>
          `chain ${name} { type filter hook ${hook} priority -250; tcp ${match} 9090 notrack; };`;
        await inPod(pod.netns, "nft", `table inet sneaky { ${chain("out", "output", "dport")} ${chain("in", "prerouting", "sport")} }`);
        expect(await net.connect(pod.netns, clientIp, 9090, 1000)).toBe("real-server");
        const found = await audit();
        expect(found.status).toBe("drifted");
        expect(found.details.sort()).toEqual(
          [
            ["output", "out"],
            ["prerouting", "in"],
          ].map(([hook, name]) =>
            expect.stringMatching(
              new RegExp(
                `^ipv4: untracked TCP never reaches the redirect: table inet sneaky, filter at ${hook} priority -250, chain ${name}: .*nft:notrack`,
              ),
            ),
          ),
        );
        await inPod(pod.netns, "nft", "delete table inet sneaky");
        expect(await audit()).toMatchObject({ status: "protected" });
      });
    });
  }
});
