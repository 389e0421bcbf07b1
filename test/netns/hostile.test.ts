import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { unfinishedAdd } from "../../src/audit/classify.js";
import { logFileMaxBytes } from "../../src/log.js";
import { conflist } from "../kit/agent/host.js";
import { FakeApiServer, type Fault, podObject } from "../kit/api/server.js";
import { meshcniNetconf, podArgs, sleep, until } from "../kit/common.js";
import { expectCniError } from "../kit/netns/expect-cni.js";
import { TestNetwork } from "../kit/netns/network.js";
import { invokePlugin, invokePluginIn, natRules, outcome, pluginEnv, startPlugin } from "../kit/netns/plugin-process.js";
import { meshcniBinary } from "../kit/paths.js";
import { describeAsRoot } from "../kit/root-suites.js";

/**
 * What a hostile probe of the compiled plugin found (issue 9), one describe per finding:
 * each runs the binary against real netns and the in-test API server.
 */
describeAsRoot("meshcni under hostile input", () => {
  const api = new FakeApiServer();
  const net = new TestNetwork(21);
  const podPath = "/api/v1/namespaces/demo/pods/web";
  let kubeconfig = "";
  let pod = "";
  const env = (extra: Record<string, string> = {}) => pluginEnv(net.netnsPath(pod), "hostile", podArgs("demo", "web"), extra);
  const conf = (extra: Record<string, unknown> = {}, linkerd: Record<string, unknown> = {}) =>
    meshcniNetconf({ stateDir: net.stateDir, linkerd }, { kubernetes: { kubeconfig, timeout_seconds: 3 }, ...extra });
  const records = () => (existsSync(join(net.stateDir, "attachments")) ? readdirSync(join(net.stateDir, "attachments")) : []);
  /** A fake binary early on PATH: a shell script. */
  const fakeBinary = (name: string, script: string) => {
    const dir = join(net.dir, "fake-bin");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, name), `#!/bin/sh\n${script}\n`);
    chmodSync(join(dir, name), 0o755);
    return `${dir}:${process.env.PATH}`;
  };

  beforeAll(async () => {
    await api.start();
    kubeconfig = api.writeKubeconfig();
    api.addPod(podObject("demo", "web", { proxy: "container", nodeName: "node-h", podIP: "10.251.21.9" }));
    api.addPod(podObject("demo", "other", { proxy: "container" }));
    pod = await net.addNetns("pod");
  });

  afterEach(async () => {
    api.faults.clear();
    await invokePlugin(env({ CNI_COMMAND: "DEL" }), conf({}, { ipv6: true }));
    expect(await natRules(pod, "nft")).toEqual([]);
  });

  afterAll(async () => {
    await net.cleanup();
    await api.stop();
  });

  describe("1. an API answer that is not the pod asked for fails closed", () => {
    const stored = () => structuredClone(api.pods.get("demo/web")!);
    it.each<[string, () => Fault, string]>([
      ["{}", () => ({ body: "{}" }), "answered with an object without a kind"],
      ["[]", () => ({ body: "[]" }), "answered with an array"],
      ["null", () => ({ body: "null" }), "answered with null"],
      [
        "a Status object",
        () => ({ body: JSON.stringify({ kind: "Status", status: "Failure", message: "etcd is down" }) }),
        "answered with a Status",
      ],
      ["a pod without spec", () => ({ body: JSON.stringify({ ...stored(), spec: undefined }) }), "Pod demo/web is malformed: spec"],
      ["another pod's object", () => ({ body: JSON.stringify(api.pods.get("demo/other")) }), "answered with Pod demo/other, not demo/web"],
      ["an answer that never ends", () => ({ endless: true }), "larger than 4 MiB"],
    ])("%s: code 11 naming what was wrong, no rules, no record", async (_title, fault, fragment) => {
      api.faults.set(podPath, fault());
      const result = await invokePlugin(env(), conf());
      expectCniError(result, 11, "pod demo/web", fragment);
      expect(await natRules(pod, "nft")).toEqual([]);
      expect(records()).toEqual([]);
    });

    it("a pod without a UID while the runtime names one: code 11", async () => {
      const { uid: _uid, ...metadata } = stored().metadata as Record<string, unknown>;
      api.faults.set(podPath, { body: JSON.stringify({ ...stored(), metadata }) });
      const result = await invokePlugin(env({ CNI_ARGS: `${podArgs("demo", "web")};K8S_POD_UID=uid-demo-web` }), conf());
      expectCniError(result, 11, "has pod UID (none), the runtime asked for uid-demo-web");
    });
  });

  describe("2. never the plugin's own netns", () => {
    let host = "";
    beforeAll(async () => {
      host = await net.addNetns("fakehost");
    });

    it.each(["/proc/self/ns/net", "the same netns by its bind mount"])(
      "refuses %s for ADD and CHECK with code 4, before any API request",
      async (which) => {
        const netns = which.startsWith("/") ? which : net.netnsPath(host);
        const before = api.requests.length;
        for (const command of ["ADD", "CHECK"]) {
          expectCniError(
            await invokePluginIn(host, env({ CNI_COMMAND: command, CNI_NETNS: netns }), conf()),
            4,
            "CNI_NETNS",
            "meshcni's own",
          );
        }
        expect(api.requests.length).toBe(before);
        expect(await natRules(host, "nft")).toEqual([]);
        expect((await invokePluginIn(host, env({ CNI_COMMAND: "DEL", CNI_NETNS: netns }), conf())).exitCode).toBe(0);
      },
    );
  });

  describe("3. a second attachment's DEL keeps the pod's redirect", () => {
    it("ADD eth0, ADD net1, DEL net1: CHECK eth0 passes; DEL eth0 removes the rules", async () => {
      const attachment = (command: string, ifname: string) => env({ CNI_COMMAND: command, CNI_CONTAINERID: "multus", CNI_IFNAME: ifname });
      for (const ifname of ["eth0", "net1"]) expect((await invokePlugin(attachment("ADD", ifname), conf())).exitCode).toBe(0);
      const rules = await natRules(pod, "nft");
      expect((await invokePlugin(attachment("DEL", "net1"), conf())).exitCode).toBe(0);
      expect(await natRules(pod, "nft")).toEqual(rules);
      expect((await invokePlugin(attachment("CHECK", "eth0"), conf())).exitCode).toBe(0);
      expect(records()).toEqual(["multus_eth0.json"]);
      expect((await invokePlugin(attachment("DEL", "eth0"), conf())).exitCode).toBe(0);
      expect(await natRules(pod, "nft")).toEqual([]);
      expect(records()).toEqual([]);
    });
  });

  describe("4. an ADD killed midway leaves a recognisably unfinished state, and its leftovers are cleaned", () => {
    /** Legacy iptables' per-process lock files (the attachments' locks beside them are kept: the kernel releases them). */
    const xtablesLocks = () => readdirSync(join(net.stateDir, "locks")).filter((name) => name.startsWith("xtables"));
    /** Starts ADD with a restore that hangs, and kills the plugin once it is in it. */
    async function killDuringRestore(binary: string, mode: string): Promise<void> {
      const marker = join(net.dir, `${binary}.started`);
      const PATH = fakeBinary(binary, `echo $$ > ${marker}\nexec sleep 30`);
      const child = startPlugin(env({ PATH, CNI_CONTAINERID: "killed" }), conf({}, { ipv6: true, "iptables-mode": mode }));
      const started = performance.now();
      while (!existsSync(marker)) {
        if (performance.now() - started > 10_000) throw new Error("the plugin never reached the IPv6 restore");
        await sleep(10);
      }
      child.kill("SIGKILL");
      await child;
      process.kill(Number(readFileSync(marker, "utf8")), "SIGKILL");
    }

    it("a sweep from another PID namespace (the agent has no hostPID) during a slow ADD leaves its files; the ADD succeeds", async () => {
      const marker = join(net.dir, "slow-restore.started");
      // The real restore first (it creates the plugin's lock file), then a pause before the ADD goes on.
      const PATH = fakeBinary("iptables-legacy-restore", `/usr/sbin/iptables-legacy-restore "$@" || exit $?\ntouch ${marker}\nsleep 2`);
      const adding = startPlugin(env({ PATH, CNI_CONTAINERID: "slow" }), conf({}, { "iptables-mode": "legacy" }));
      // And a record being written by a live host process, as the sweep's PIDs cannot see it.
      const writer = spawn("sleep", ["30"]);
      const here = readlinkSync("/proc/self/ns/pid").replace(/\D/g, "");
      const temp = `.w_eth0.json.meshcni-ns${here}-${writer.pid}-0badc0de.tmp`;
      try {
        await until(() => existsSync(marker), 10_000);
        mkdirSync(join(net.stateDir, "attachments"), { recursive: true });
        writeFileSync(join(net.stateDir, "attachments", temp), "{");
        const locks = xtablesLocks();
        expect(locks).toEqual([expect.stringMatching(/^xtables\.meshcni-ns\d+-\d+-[0-9a-f]+\.lock$/)]);
        const gc = await outcome(
          await startPlugin({ CNI_COMMAND: "GC", CNI_PATH: net.binDir }, conf({ cniVersion: "1.1.0" }), {
            wrap: ["unshare", "--pid", "--fork", "--mount-proc"],
          }),
        );
        expect(gc.exitCode, gc.stdout).toBe(0);
        expect(xtablesLocks()).toEqual(locks);
        expect(records()).toContain(temp);
        const added = outcome(await adding);
        expect(added.exitCode, added.stdout).toBe(0);
        expect(records()).toContain("slow_eth0.json");
      } finally {
        writer.kill();
        await adding;
        rmSync(join(net.stateDir, "attachments", temp), { force: true });
        await invokePlugin(env({ CNI_COMMAND: "DEL", CNI_CONTAINERID: "slow" }), conf({}, { "iptables-mode": "legacy" }));
      }
    });

    it("between the IPv4 and IPv6 restores: the record says adding, the audit says so, DEL clears it", async () => {
      await killDuringRestore("ip6tables-nft-restore", "nft");
      expect(JSON.parse(readFileSync(join(net.stateDir, "attachments", "killed_eth0.json"), "utf8")).state).toBe("adding");
      expect(await natRules(pod, "nft")).toContain(":PROXY_INIT_OUTPUT - [0:0]");
      expect(await natRules(pod, "nft", "ipv6")).toEqual([]);
      // The node's chain, whose meshcni entry the audit makes the pod's plan from.
      const { cniVersion, name, ...entry } = conf({}, { ipv6: true, "iptables-mode": "nft" });
      const netDir = join(net.dir, "net.d");
      mkdirSync(netDir, { recursive: true });
      writeFileSync(join(netDir, "mesh.conflist"), conflist(String(name), [entry], { cniVersion }));
      const audit = await execa(
        meshcniBinary,
        ["audit", "--node", "node-h", "--kubeconfig", kubeconfig, "--state-dir", net.stateDir, "--net-dir", netDir, "--output", "json"],
        { reject: false },
      );
      expect(JSON.parse(audit.stdout).pods).toEqual([
        expect.objectContaining({ name: "web", status: "drifted", details: expect.arrayContaining([unfinishedAdd]) }),
      ]);
      expect((await invokePlugin(env({ CNI_COMMAND: "DEL", CNI_CONTAINERID: "killed" }), conf({}, { ipv6: true }))).exitCode).toBe(0);
      expect(records()).toEqual([]);
    });

    it("legacy's lock file and a record's temp file left by killed processes are swept by the next GC", async () => {
      await killDuringRestore("ip6tables-legacy-restore", "legacy");
      expect(xtablesLocks()).toEqual([expect.stringMatching(/^xtables\.meshcni-ns\d+-\d+-[0-9a-f]+\.lock$/)]);
      const deadWriter = spawnSync("true").pid;
      const here = readlinkSync("/proc/self/ns/pid").replace(/\D/g, "");
      writeFileSync(join(net.stateDir, "attachments", `.x_eth0.json.meshcni-ns${here}-${deadWriter}-12345678.tmp`), "{");
      const gc = await invokePlugin({ CNI_COMMAND: "GC", CNI_PATH: net.binDir }, conf({ cniVersion: "1.1.0" }));
      expect(gc.exitCode, gc.stdout).toBe(0);
      expect(xtablesLocks()).toEqual([]);
      expect(records()).toEqual(["killed_eth0.json"]);
      expect(
        (await invokePlugin(env({ CNI_COMMAND: "DEL", CNI_CONTAINERID: "killed" }), conf({}, { ipv6: true, "iptables-mode": "legacy" })))
          .exitCode,
      ).toBe(0);
      expect(await natRules(pod, "legacy")).toEqual([]);
    });
  });

  describe("5. nothing hangs the plugin", () => {
    let fifo = "";
    beforeAll(async () => {
      fifo = join(net.dir, "fifo");
      await execa("mkfifo", [fifo]);
    });
    const timed = async (run: () => Promise<Awaited<ReturnType<typeof invokePlugin>>>) => {
      const started = performance.now();
      const result = await run();
      return { result, ms: performance.now() - started };
    };

    it("a fifo as CNI_NETNS: code 5 at once", async () => {
      const { result, ms } = await timed(() => invokePlugin(env({ CNI_NETNS: fifo }), conf()));
      expectCniError(result, 5, `network namespace ${fifo} is not available: not a network namespace (a fifo)`);
      expect(ms).toBeLessThan(3000);
    });

    it("a fifo as the kubeconfig: code 11 at once", async () => {
      const { result, ms } = await timed(() => invokePlugin(env(), conf({ kubernetes: { kubeconfig: fifo } })));
      expectCniError(result, 11, `${fifo} is a fifo, not a regular file`);
      expect(ms).toBeLessThan(3000);
    });

    it("a fifo as the log file: ignored, with a warning; the ADD goes through", async () => {
      const { result, ms } = await timed(() => invokePlugin(env(), conf({ log_file: fifo })));
      expect(result.exitCode, result.stdout).toBe(0);
      expect(result.stderr).toContain("not writing the log file");
      expect(await natRules(pod, "nft")).toContain(":PROXY_INIT_OUTPUT - [0:0]");
      expect(ms).toBeLessThan(3000);
    });

    it("an ADD still waiting at timeout_seconds + 15 s (for a write another process holds) is ended by the watchdog: code 11, no rules", async () => {
      const locks = join(net.stateDir, "locks");
      mkdirSync(locks, { recursive: true, mode: 0o700 });
      const files = Array.from({ length: 64 }, (_, slot) => join(locks, `attachment-${slot}.lock`));
      // One process holds every attachment's lock, as a writer stuck midway would.
      const script = 'for file in "$@"; do exec {fd}>"$file"; flock -x "$fd"; done; echo held; exec sleep 120';
      const holder = execa("bash", ["-c", script, "holder", ...files], { reject: false });
      try {
        await new Promise<void>((resolve) => holder.stdout!.once("data", () => resolve()));
        const { result, ms } = await timed(() => invokePlugin(env(), conf()));
        // timeout_seconds 3 + 15 s: before the lock's own 20 s.
        expectCniError(result, 11, "meshcni did not finish ADD within 18 s");
        expect(ms).toBeGreaterThanOrEqual(18_000);
        expect(await natRules(pod, "nft")).toEqual([]);
      } finally {
        holder.kill("SIGKILL");
        await holder;
      }
    }, 40_000);

    it("a stdin over 16 MiB: code 6 naming the limit", async () => {
      const huge = `{"cniVersion":"1.0.0","name":"x","type":"meshcni","padding":"${"a".repeat(17 << 20)}"}`;
      const result = await invokePlugin(env(), huge);
      expectCniError(result, 6, "network config on stdin is larger than 16 MiB");
    });

    it("a stdin that never closes: code 6 after 5 s", async () => {
      const started = performance.now();
      const child: ChildProcess = spawn(meshcniBinary, [], { env: env(), stdio: ["pipe", "pipe", "ignore"] });
      child.stdin!.write("{");
      let stdout = "";
      child.stdout!.on("data", (chunk: Buffer) => {
        stdout += chunk;
      });
      const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
      child.stdin!.destroy();
      expect(code).toBe(1);
      expect(JSON.parse(stdout)).toMatchObject({ code: 6, msg: "stdin was not closed within 5 s: no complete network config" });
      expect(performance.now() - started).toBeLessThan(8000);
    }, 15_000);

    it("an iptables-restore that never returns: killed after 10 s, code 5, nothing left", async () => {
      const PATH = fakeBinary("iptables-nft-restore", "exec sleep 60");
      const { result, ms } = await timed(() => invokePlugin(env({ PATH }), conf()));
      expectCniError(result, 5, "iptables-nft-restore timed out after 10 s and was killed");
      expect(ms).toBeLessThan(14_000);
      expect(records()).toEqual([]);
    }, 20_000);
  });

  describe("6. the log file", () => {
    it("is never written through a symlink", async () => {
      const victim = join(net.dir, "victim");
      writeFileSync(victim, "precious\n");
      symlinkSync(victim, join(net.dir, "link.log"));
      const result = await invokePlugin(env(), conf({ log_file: join(net.dir, "link.log") }));
      expect(result.exitCode).toBe(0);
      expect(readFileSync(victim, "utf8")).toBe("precious\n");
      expect(result.stderr).toContain("it is a symlink, which meshcni does not follow");
    });

    it(`is rotated to .1 once past ${logFileMaxBytes >> 20} MiB`, async () => {
      const log = join(net.dir, "big.log");
      writeFileSync(log, "x".repeat(logFileMaxBytes));
      expect((await invokePlugin(env(), conf({ log_file: log }))).exitCode).toBe(0);
      expect(statSync(`${log}.1`).size).toBe(logFileMaxBytes);
      expect(readFileSync(log, "utf8")).toContain('"msg":"redirect applied"');
    });
  });

  describe("7. the right codes", () => {
    it("a subnet with a zero-led prefix: code 7 naming the annotation and the token", async () => {
      api.addPod(podObject("demo", "zeros", { proxy: "container", annotations: { "config.linkerd.io/skip-subnets": "10.0.0.0/08" } }));
      const result = await invokePlugin(env({ CNI_ARGS: podArgs("demo", "zeros") }), conf());
      expectCniError(result, 7, "config.linkerd.io/skip-subnets", '"10.0.0.0/08"');
      expect(await natRules(pod, "nft")).toEqual([]);
    });

    it("a record DEL cannot remove: the rules go first, and the error names EPERM", async () => {
      expect((await invokePlugin(env({ CNI_CONTAINERID: "immutable" }), conf())).exitCode).toBe(0);
      const record = join(net.stateDir, "attachments", "immutable_eth0.json");
      await execa("chattr", ["+i", record]);
      try {
        const result = await invokePlugin(env({ CNI_COMMAND: "DEL", CNI_CONTAINERID: "immutable" }), conf());
        expectCniError(result, 5, "EPERM", record);
        expect(await natRules(pod, "nft")).toEqual([]);
      } finally {
        await execa("chattr", ["-i", record]);
      }
      expect((await invokePlugin(env({ CNI_COMMAND: "DEL", CNI_CONTAINERID: "immutable" }), conf())).exitCode).toBe(0);
      expect(records()).toEqual([]);
    });

    it("300-character container ids and ifnames: recorded under a hash, removed by DEL", async () => {
      const long = env({ CNI_CONTAINERID: "c".repeat(300), CNI_IFNAME: "i".repeat(300) });
      const added = await invokePlugin(long, conf());
      expect(added.exitCode, added.stdout).toBe(0);
      expect(records()).toEqual([expect.stringMatching(/^h-[0-9a-f]{32}_h-[0-9a-f]{32}\.json$/)]);
      expect((await invokePlugin({ ...long, CNI_COMMAND: "DEL" }, conf())).exitCode).toBe(0);
      expect(records()).toEqual([]);
    });
  });
});
