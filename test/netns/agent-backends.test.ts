import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentHarness } from "../kit/agent/harness.js";
import { askAgent } from "../kit/agent/socket.js";
import { FakeApiServer, podObject } from "../kit/api/server.js";
import { agentTemplate, podArgs, until } from "../kit/common.js";
import { TestNetwork } from "../kit/netns/network.js";
import { invokePlugin, natRules, pluginEnv } from "../kit/netns/plugin-process.js";
import { describeAsRoot } from "../kit/root-suites.js";

const node = "node-b";

/**
 * The agent's writers with each backend its own entry can name (the agent writes only its
 * own entry's redirect: a caller asking for another backend is handed back). One agent per
 * backend, its entry's `iptables-mode` that backend; the legacy one's iptables-legacy-restore
 * can be made to fail late, past the plugin's wait.
 */
describeAsRoot("the agent's writers, by backend", () => {
  describe.each([
    ["nftables", 88],
    ["legacy", 89],
  ] as const)("its entry's iptables-mode %s", (mode, networkId) => {
    const api = new FakeApiServer();
    const net = new TestNetwork(networkId);
    const host = new AgentHarness({ onHost: true });
    const socket = () => join(net.stateDir, "agent", "plugin.sock");
    let entry: Record<string, unknown> = {};
    /** While this file exists, the agent's next legacy restore of a redirect takes it, waits 2.5 s (past the plugin's wait) and dies (no answer: the write fails). */
    const slowFailure = () => join(net.dir, "writer-fails-late");

    const writes = (verb: "ADD" | "DEL") =>
      host.metric(`meshcni_agent_writes_total{verb="${verb}",result="done"}`).then((count) => count ?? 0);
    const record = (containerId: string) => {
      const file = join(net.stateDir, "attachments", `${containerId}_eth0.json`);
      return existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as { state: string; backend: string }) : undefined;
    };
    /** The pod in the API and in the agent's cache, a fresh netns, and the plugin's ADD as the runtime runs it. */
    const addPod = async (name: string) => {
      api.addPod(podObject("shop", name, { proxy: "container", nodeName: node }));
      await until(async () => {
        const answer = await askAgent(socket(), { get: "pod", namespace: "shop", name, uid: `uid-shop-${name}` });
        return "cached" in answer && answer.cached;
      });
      const netns = await net.addNetns(name);
      const env = pluginEnv(net.netnsPath(netns), `c-${name}`, `${podArgs("shop", name)};K8S_POD_UID=uid-shop-${name}`);
      return { result: await invokePlugin(env, { cniVersion: "1.0.0", name: "primary", ...entry }), netns };
    };
    const del = (name: string, netns: string) =>
      invokePlugin(pluginEnv(net.netnsPath(netns), `c-${name}`, podArgs("shop", name), { CNI_COMMAND: "DEL" }), {
        cniVersion: "1.0.0",
        name: "primary",
        ...entry,
      });

    beforeAll(async () => {
      await api.start();
      api.addNode({ metadata: { name: node } });
      const fakeBin = join(net.dir, "agent-bin");
      mkdirSync(fakeBin, { recursive: true });
      const restore = join(fakeBin, "iptables-legacy-restore");
      writeFileSync(
        restore,
        [
          "#!/bin/sh",
          'input="$(cat)"',
          // Only a restore that writes the redirect (not one that reads or probes).
          `case "$input" in *PROXY_INIT_REDIRECT*) if rm ${slowFailure()} 2>/dev/null; then sleep 2.5; kill -9 $$; fi;; esac`,
          'printf "%s\\n" "$input" | exec /usr/sbin/iptables-legacy-restore "$@"',
          "",
        ].join("\n"),
      );
      chmodSync(restore, 0o755);
      writeFileSync(host.path("10-primary.conflist"), JSON.stringify(net.primaryConflist("primary")));
      const template = agentTemplate(net.stateDir, { linkerd: { "iptables-mode": mode } });
      await host.startWithApi(api, ["--template", template, "--node", node, "--state-dir", net.stateDir], {
        POD_NAMESPACE: "meshcni",
        PATH: `${fakeBin}:${process.env.PATH}`,
      });
      await host.waitFor(
        () => host.logs.some((line) => line.msg === "answering the plugin") && host.types("10-primary.conflist").at(-1) === "meshcni",
        10_000,
      );
      entry = host.json("10-primary.conflist").plugins!.at(-1) as Record<string, unknown>;
    }, 30_000);

    afterAll(async () => {
      await host.cleanup();
      await net.cleanup();
      await api.stop();
    });

    const present = async (netns: string) =>
      mode === "legacy"
        ? (await natRules(netns, "legacy")).length > 0
        : (await execa("ip", ["netns", "exec", netns, "nft", "list", "table", "ip", "meshcni"], { reject: false })).exitCode === 0;

    it("writes and removes with it: the rules in place after ADD, gone after DEL, both by the agent", async () => {
      const [added, removed] = [await writes("ADD"), await writes("DEL")];
      const { result, netns } = await addPod("writer");
      expect(result.exitCode, result.stdout + result.stderr).toBe(0);
      expect(await present(netns)).toBe(true);
      expect(record("c-writer")).toMatchObject({ state: "added", backend: mode });
      const deleted = await del("writer", netns);
      expect(deleted.exitCode, deleted.stdout + deleted.stderr).toBe(0);
      expect(await present(netns)).toBe(false);
      expect(record("c-writer")).toBeUndefined();
      expect([await writes("ADD"), await writes("DEL")]).toEqual([added + 1, removed + 1]);
    });

    // Its fake restore fails late for legacy only.
    if (mode === "legacy")
      it("a write that fails after the plugin stopped waiting undoes nothing the plugin then wrote itself", async () => {
        writeFileSync(slowFailure(), "");
        const { result, netns } = await addPod("late-writer");
        expect(result.exitCode, result.stdout + result.stderr).toBe(0);
        expect(result.stderr).toContain("no answer within 2000 ms");
        expect(existsSync(slowFailure())).toBe(false);
        // The agent says so once its writer answered that it failed (2.5 s in): the writer answers only after its own
        // undo, so whatever it would take away is gone by then. What the plugin wrote stays.
        await until(
          () =>
            host.logs.some(
              (line) => line.msg === "the plugin writes the redirect itself: the agent could not" && line.pod === "shop/late-writer",
            ),
          5000,
        ).catch(() => {
          throw new Error(JSON.stringify(host.logs.slice(-8)));
        });
        expect(record("c-late-writer")).toMatchObject({ state: "added", backend: "legacy" });
        expect(await natRules(netns, "legacy")).toContain(":PROXY_INIT_REDIRECT - [0:0]");
        expect((await del("late-writer", netns)).exitCode).toBe(0);
      });
  });
});
