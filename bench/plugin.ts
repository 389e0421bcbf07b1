// The plugin's section (issue 5): what a pod start pays for meshcni, side by side with
// the alternatives, interleaved in one run so the ratios hold on a noisy machine.
import { mkdirSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { FakeApiServer, podObject } from "../test/kit/api/server.js";
import { meshcniNetconf, podArgs } from "../test/kit/common.js";
import { meshcniBinary } from "../test/kit/paths.js";
import { MemoryCgroup } from "./cgroup.js";
import { cleanupMeasure, type Measured, measure } from "./measure.js";
import { AgentShares, type BenchAgent, startBenchAgent } from "./plugin-agents.js";
import {
  buildGoPattern,
  goPattern,
  goPatternArgs,
  meshedPod,
  nftText,
  node,
  perRuleLines,
  perRuleScript,
  restoreText,
  tuning,
} from "./plugin-baselines.js";
import { answerBuckets, dropAllNetns, dropNetns, freshNetns, netnsPath, slowestAnswers, writersMemoryMb } from "./plugin-probes.js";
import { judgePlugin, rowNames as names, type PluginBench, printPlugin } from "./plugin-report.js";
import { saveResults } from "./stats.js";

const warmup = 3;
const iterations = 30;
const concurrentPods = 100;
const backend = "nft";
/** A call through the agent: the backend's agent (the default's unless named) and the pod. */
type AgentCall = { mode?: string; pod?: string };

export async function benchPlugin(): Promise<PluginBench> {
  await buildGoPattern();
  const api = await new FakeApiServer().start();
  const kubeconfig = api.writeKubeconfig();
  api.addPod(meshedPod);
  api.addPod(podObject("bench", "plain", { nodeName: node }));
  // The plugin's state dir on a tmpfs, as a node's /var/run is: its records' writes cost what they cost there.
  const stateDir = join(api.dir, "state");
  mkdirSync(stateDir, { recursive: true });
  await execa("mount", ["-t", "tmpfs", "-o", "size=64m,mode=0755", "meshcni-bench-state", stateDir]);
  // The agents on this "node", one per backend the bench asks through: an agent writes only what its own netconf entry
  // says, iptables-mode and state dir included.
  const agents: Record<string, BenchAgent> = {
    [backend]: await startBenchAgent(api, backend, stateDir),
    nftables: await startBenchAgent(api, "nftables", join(stateDir, "nftables")),
  };
  const agent = agents[backend]!.harness;
  const prevResult = { cniVersion: "1.0.0", interfaces: [{ name: "eth0" }], ips: [{ address: "10.253.0.2/24", interface: 0 }] };
  const conf = (mode: string, viaAgent = false) => {
    const entry = viaAgent ? agents[mode]! : { dir: stateDir, socket: undefined };
    return JSON.stringify(
      meshcniNetconf(
        { stateDir: entry.dir, kubeconfig, name: "bench", linkerd: { "iptables-mode": mode } },
        { prevResult, ...(entry.socket ? { agent_socket: entry.socket } : {}) },
      ),
    );
  };
  const cniEnv = (command: string, netns: string, pod: string) => ({
    PATH: process.env.PATH ?? "",
    CNI_COMMAND: command,
    CNI_CONTAINERID: `bench-${netns}`,
    CNI_NETNS: netnsPath(netns),
    CNI_IFNAME: "eth0",
    // As containerd passes them: the pod's UID too.
    CNI_ARGS: `IgnoreUnknown=1;${podArgs("bench", pod)};K8S_POD_UID=uid-bench-${pod}`,
    CNI_PATH: "/usr/lib/cni",
  });
  const meshcni = (
    command: string,
    netns: string,
    options: { pod?: string; mode?: string; viaAgent?: boolean; cgroup?: MemoryCgroup } = {},
  ) => {
    const run = options.cgroup ? options.cgroup.wrap(meshcniBinary, []) : { command: meshcniBinary, args: [] };
    return measure(run.command, run.args, {
      env: cniEnv(command, netns, options.pod ?? "meshed"),
      input: conf(options.mode ?? backend, options.viaAgent),
    });
  };
  const tuningConf = JSON.stringify({ cniVersion: "1.0.0", name: "bench", type: "tuning", prevResult });
  const goArgs = goPatternArgs(api, backend);

  const samples: Record<string, Measured[]> = {};
  const record = (name: string, measured: Measured, round: number) => {
    if (measured.exitCode !== 0) throw new Error(`${name} failed: ${measured.stdout}`);
    if (round < warmup) return;
    samples[name] ??= [];
    samples[name].push(measured);
  };

  try {
    // The nft floor writes what meshcni's nftables backend would: its CHECK passes on it.
    const same = await freshNetns();
    await execa("ip", ["netns", "exec", same, "nft", "-f", "-"], { input: nftText });
    const checked = await meshcni("CHECK", same, { mode: "nftables" });
    if (checked.exitCode !== 0) throw new Error(`the nft floor's rules are not meshcni's: ${checked.stdout}`);
    await dropNetns(same);

    // Each agent row's share by the agent's own clock.
    const shares = new AgentShares();
    const byAgent = async (name: string, command: "ADD" | "DEL", netns: string, round: number, options: AgentCall = {}) => {
      const harness = agents[options.mode ?? backend]!.harness;
      const run = () => meshcni(command, netns, { ...options, viaAgent: true });
      record(name, await shares.measure(name, command, harness, round >= warmup, run), round);
    };
    for (let round = 0; round < warmup + iterations; round++) {
      const spaces = await Promise.all(Array.from({ length: 10 }, () => freshNetns()));
      const [agentNftables, viaAgent, meshed, nftables, plain, go, perRule, floor, floorNftables, tuned] = spaces as [string, ...string[]];
      await byAgent(names.addAgentNftables, "ADD", agentNftables, round, { mode: "nftables" });
      await byAgent(names.addAgent, "ADD", viaAgent!, round);
      record(names.add, await meshcni("ADD", meshed!), round);
      record(names.check, await meshcni("CHECK", meshed!), round);
      record(names.delNoAgent, await meshcni("DEL", meshed!), round);
      record(names.addNftables, await meshcni("ADD", nftables!, { mode: "nftables" }), round);
      record(names.checkNftables, await meshcni("CHECK", nftables!, { mode: "nftables" }), round);
      record(names.delNoAgentNftables, await meshcni("DEL", nftables!, { mode: "nftables" }), round);
      await byAgent(names.delNftables, "DEL", agentNftables, round, { mode: "nftables" });
      await byAgent(names.del, "DEL", viaAgent!, round);
      await byAgent(names.addPlain, "ADD", plain!, round, { pod: "plain" });
      record(names.go, await measure(goPattern, goArgs, { env: cniEnv("ADD", go!, "meshed"), input: tuningConf }), round);
      record(names.perRule, await measure(perRuleScript, [netnsPath(perRule!), backend], { input: perRuleLines }), round);
      record(
        names.floor,
        await measure("nsenter", [`--net=${netnsPath(floor!)}`, `iptables-${backend}-restore`, "--noflush"], { input: restoreText }),
        round,
      );
      record(names.floorNftables, await measure("ip", ["netns", "exec", floorNftables!, "nft", "-f", "-"], { input: nftText }), round);
      record(names.tuning, await measure(tuning, [], { env: cniEnv("ADD", tuned!, "meshed"), input: tuningConf }), round);
      record(names.version, await measure(meshcniBinary, [], { env: { CNI_COMMAND: "VERSION" }, input: "{}" }), round);
      record(names.goVersion, await measure(tuning, [], { env: { CNI_COMMAND: "VERSION" }, input: "{}" }), round);
      await Promise.all(spaces.map((name) => dropNetns(name)));
    }

    // The agent path measured is the agent writing: a write handed back to the plugin would measure the plugin writing itself.
    let handedBack = 0;
    for (const { harness } of Object.values(agents))
      handedBack += (await harness.metric('meshcni_agent_writes_total{verb="ADD",result="handed_back"}')) ?? 0;
    if (handedBack) throw new Error(`the agent handed ${handedBack} ADDs back to the plugin: the bench measures the wrong path`);
    // The default deployment: the agent answers, iptables (nft) writes; each burst in a memory cgroup of its own.
    const burst = async (name: string, add: (netns: string, cgroup: MemoryCgroup) => Promise<Measured>) => {
      const spaces = await Promise.all(Array.from({ length: concurrentPods }, () => freshNetns()));
      const cgroup = MemoryCgroup.create(`meshcni-bench-${name}-${process.pid}`);
      try {
        const started = performance.now();
        const results = await Promise.all(spaces.map((netns) => add(netns, cgroup)));
        return { wallMs: Math.round(performance.now() - started), results, peakMb: cgroup.peakMb() };
      } finally {
        await Promise.all(spaces.map(dropNetns));
        cgroup.remove();
      }
    };
    // Beside a CPU hog (a busy loop per core), as on a loaded node: pod starts must still never fail.
    const hogs = availableParallelism();
    const hog = Array.from({ length: hogs }, () => execa("sh", ["-c", "while :; do :; done"], { reject: false }));
    let ours: Awaited<ReturnType<typeof burst>>;
    let answered = { p99: "(not measured)", max: "(not measured)" };
    let theirs: Awaited<ReturnType<typeof burst>>;
    try {
      const answeredBefore = answerBuckets(await agent.scrape());
      ours = await burst("meshcni", (netns, cgroup) => meshcni("ADD", netns, { viaAgent: true, cgroup }));
      answered = slowestAnswers(answeredBefore, answerBuckets(await agent.scrape()));
      theirs = await burst("go", (netns, cgroup) => {
        const run = cgroup.wrap(goPattern, goArgs);
        return measure(run.command, run.args, { env: cniEnv("ADD", netns, "meshed"), input: tuningConf });
      });
    } finally {
      for (const loop of hog) loop.kill("SIGKILL");
      await Promise.all(hog);
    }
    const failed = ours.results.filter((result) => result.exitCode !== 0);
    const concurrency = {
      pods: concurrentPods,
      wallMs: ours.wallMs,
      failures: failed.length,
      // Each failure's CNI error, as the runtime would log it.
      failed: [...new Set(failed.map((result) => result.stdout.trim()))],
      askedApi: ours.results.filter((result) => result.stderr.includes("asking the API server instead of the agent")).length,
      // The agent decided but handed the writing back (its writer busy past the plugin's wait): the plugin logged what it wrote.
      wroteItself: ours.results.filter(
        (result) => result.stderr.includes("redirect applied") && !result.stderr.includes("asking the API server instead of the agent"),
      ).length,
      writers: writersMemoryMb(agent.pid),
      answerP99: answered.p99,
      answerMax: answered.max,
      cgroupPeakMb: ours.peakMb,
      goCgroupPeakMb: theirs.peakMb,
      goWallMs: theirs.wallMs,
    };

    const result = { ...judgePlugin(samples, names, concurrency), concurrency, answerMs: shares.meansMs() };
    printPlugin(result, { iterations, warmup, hogs });
    console.log(`results: ${saveResults("plugin", result)}`);
    return result;
  } finally {
    for (const { harness } of Object.values(agents)) await harness.cleanup();
    await dropAllNetns();
    cleanupMeasure();
    await execa("umount", [stateDir], { reject: false });
    await api.stop();
  }
}
