// The plugin's section (issue 5): what a pod start pays for meshcni, side by side with
// the alternatives, interleaved in one run so the ratios hold on a noisy machine.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import type { V1Pod } from "@kubernetes/client-node";
import { execa } from "execa";
import { renderApply } from "../src/iptables/restore.js";
import { parseNatTable } from "../src/iptables/save.js";
import { agentTimeoutMs } from "../src/kube/agent-connection.js";
import { parseNetConf } from "../src/mesh/netconf.js";
import { firewallSpecFor } from "../src/mesh/pod.js";
import { planRules } from "../src/redirect/plan.js";
import { AgentHarness, askAgent } from "../test/kit/agent.js";
import { FakeApiServer, podObject } from "../test/kit/api-server.js";
import { meshcniNetconf, podArgs, until } from "../test/kit/common.js";
import { nftRuleset } from "../test/kit/fixtures.js";
import { meshcniBinary, projectRoot } from "../test/kit/network.js";
import { MemoryCgroup } from "./cgroup.js";
import { cleanupMeasure, type Measured, measure } from "./measure.js";
import { printTable, type Summary, saveResults, summarize } from "./stats.js";

const warmup = 3;
const iterations = 30;
const concurrentPods = 100;
const node = "bench-node";
const goPattern = join(projectRoot, ".cache/bin/linkerd-pattern");
const backend = "nft";
const tuning = "/usr/lib/cni/tuning";
const perRuleScript = join(import.meta.dirname, "baselines/linkerd-per-rule.sh");

/** The default meshed pod's rules, as the per-rule baseline and the floor apply them. */
const meshedPod = podObject("bench", "meshed", { proxy: "container", nodeName: node });
const plan = planRules(
  firewallSpecFor(
    parseNetConf(JSON.stringify({ cniVersion: "1.0.0", name: "bench", type: "meshcni" })).linkerd,
    meshedPod as V1Pod,
    undefined,
    [],
  ),
  "ipv4",
);
const restoreText = renderApply(plan, parseNatTable(""));
export const perRuleLines = [
  ...Object.keys(plan.chains).map((chain) => `-N ${chain}`),
  ...Object.entries(plan.chains).flatMap(([chain, rules]) => rules.map((args) => `-A ${chain} ${args.join(" ")}`)),
  ...plan.jumps.map((jump) => `-A ${jump.from} ${jump.args.join(" ")}`),
].join("\n");

/** The same rules for nft, as meshcni's nftables backend writes them (checked below: CHECK passes on them). */
const nftText = nftRuleset(
  "ip",
  [
    'tcp dport { 4191, 4190 } return comment "proxy-init/ignore-port-4191,4190"',
    'meta l4proto tcp redirect to :4143 comment "proxy-init/redirect-all-incoming-to-proxy-port"',
  ],
  [
    'meta skuid 2102 return comment "proxy-init/ignore-proxy-user-id"',
    'oifname "lo" return comment "proxy-init/ignore-loopback"',
    'meta l4proto tcp redirect to :4140 comment "proxy-init/redirect-all-outgoing-to-proxy-port"',
  ],
);

let netnsCounter = 0;
const liveNetns = new Set<string>();
async function freshNetns(): Promise<string> {
  const name = `mcbench-${process.pid}-${netnsCounter++}`;
  await execa("ip", ["netns", "add", name]);
  liveNetns.add(name);
  return name;
}
const netnsPath = (name: string) => `/var/run/netns/${name}`;
const dropNetns = async (name: string) => {
  await execa("ip", ["netns", "del", name], { reject: false });
  liveNetns.delete(name);
};

export interface PluginBench {
  rows: Summary[];
  rssMb: Record<string, number>;
  ratios: Record<string, number>;
  concurrency: {
    pods: number;
    wallMs: number;
    failures: number;
    failed: string[];
    askedApi: number;
    wroteItself: number;
    writers: { count: number; peakRss: number; anonymous: number };
    /** The agent's answers to the burst's ADDs (its histogram's buckets): the bounds p99 and all fell within, in ms. */
    answerP99Ms: number;
    answerMaxMs: number;
    cgroupPeakMb: number;
    goCgroupPeakMb: number;
    goWallMs: number;
  };
  targets: Array<{ target: string; value: string; met: boolean }>;
}

/** The agent's answer histogram for ADD, as cumulative counts by bucket bound (seconds). */
function answerBuckets(metrics: string): Map<number, number> {
  const buckets = new Map<number, number>();
  for (const [, le, count] of metrics.matchAll(
    /^meshcni_plugin_answer_duration_seconds_bucket\{le="([^"]+)"[^}]*verb="ADD"[^}]*\} (\d+)$/gm,
  ))
    buckets.set(le === "+Inf" ? Number.POSITIVE_INFINITY : Number(le), Number(count));
  return buckets;
}

/** Between two scrapes: the smallest bucket bounds (ms) that hold 99% and all of the answers in between. */
function slowestAnswers(before: Map<number, number>, after: Map<number, number>): { p99: number; max: number } {
  const counts = [...after].map(([le, count]) => [le, count - (before.get(le) ?? 0)] as const).sort(([a], [b]) => a - b);
  const total = counts.at(-1)?.[1] ?? 0;
  const within = (share: number) => (counts.find(([, count]) => count >= share * total)?.[0] ?? Number.NaN) * 1000;
  return { p99: within(0.99), max: within(1) };
}

/**
 * The agent's writer children (`meshcni apply`): how many, and their memory in MB, the
 * largest peak RSS and the anonymous memory of all (what the node pays for them: their file
 * pages are the binary's, which the agent maps too); NaN when none is running.
 */
function writersMemoryMb(agentPid: number | undefined): { count: number; peakRss: number; anonymous: number } {
  const mb = (kb: number) => Math.round(kb / 102.4) / 10;
  try {
    const children = readFileSync(`/proc/${agentPid}/task/${agentPid}/children`, "utf8").trim().split(/\s+/);
    const writers = children.filter((pid) => readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").includes("apply"));
    const statuses = writers.map((pid) => readFileSync(`/proc/${pid}/status`, "utf8"));
    const kb = (status: string, field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1]);
    return {
      count: writers.length,
      peakRss: mb(Math.max(...statuses.map((status) => kb(status, "VmHWM")))),
      anonymous: mb(statuses.reduce((sum, status) => sum + kb(status, "RssAnon"), 0)),
    };
  } catch {
    return { count: 0, peakRss: Number.NaN, anonymous: Number.NaN };
  }
}

/** linkerd-cni's pattern as a Go program of ours (bench/baselines/linkerd-pattern), built with Debian's Go, offline. */
export async function buildGoPattern(): Promise<string> {
  await execa("go", ["build", "-o", goPattern, join(import.meta.dirname, "baselines/linkerd-pattern/main.go")], {
    env: { ...process.env, GOCACHE: join(projectRoot, ".cache/go-build"), GOPROXY: "off", GOFLAGS: "" },
  });
  return goPattern;
}

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
  const tokenFile = join(api.dir, "token");
  const caFile = join(api.dir, "ca.crt");
  const rulesFile = join(api.dir, "rules");
  writeFileSync(tokenFile, api.token);
  writeFileSync(caFile, api.caPem);
  writeFileSync(rulesFile, `${perRuleLines}\n`);
  // The agent on this "node": it watches the node's pods and answers the plugin on its socket.
  const agent = new AgentHarness({ onHost: true });
  const agentState = join(api.dir, "agent-state");
  const socket = join(agentState, "agent", "plugin.sock");
  await agent.startWithApi(api, ["--node", node, "--state-dir", agentState, "--audit-seconds", "3600"], {
    POD_NAMESPACE: "meshcni",
    LOG_LEVEL: "info",
  });
  await until(async () => {
    const answer = await askAgent(socket, { get: "pod", namespace: "bench", name: "meshed", uid: "uid-bench-meshed" }).catch(
      () => undefined,
    );
    return answer !== undefined && "cached" in answer && answer.cached;
  }, 10_000);
  const prevResult = { cniVersion: "1.0.0", interfaces: [{ name: "eth0" }], ips: [{ address: "10.253.0.2/24", interface: 0 }] };
  const conf = (mode: string, viaAgent = false) =>
    JSON.stringify(
      meshcniNetconf(
        { stateDir, kubeconfig, name: "bench", linkerd: { "iptables-mode": mode } },
        { prevResult, ...(viaAgent ? { agent_socket: socket } : {}) },
      ),
    );
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
  const goArgs = [
    "-server",
    `https://127.0.0.1:${api.port}`,
    "-token-file",
    tokenFile,
    "-ca-file",
    caFile,
    "-rules",
    rulesFile,
    "-backend",
    backend,
  ];

  const samples: Record<string, Measured[]> = {};
  const record = (name: string, measured: Measured, round: number) => {
    if (measured.exitCode !== 0) throw new Error(`${name} failed: ${measured.stdout}`);
    if (round < warmup) return;
    samples[name] ??= [];
    samples[name].push(measured);
  };
  const names = {
    addAgentNftables: "meshcni ADD, meshed, agent, nftables",
    addAgent: "meshcni ADD, meshed, agent, iptables (nft)",
    add: "meshcni ADD, meshed, no agent (API), nft",
    addNftables: "meshcni ADD, meshed, no agent (API), nftables",
    check: "meshcni CHECK, meshed, no agent, nft",
    checkNftables: "meshcni CHECK, meshed, no agent, nftables",
    del: "meshcni DEL, agent, nft",
    delNftables: "meshcni DEL, agent, nftables",
    delNoAgent: "meshcni DEL, no agent, nft",
    delNoAgentNftables: "meshcni DEL, no agent, nftables",
    addPlain: "meshcni ADD, unmeshed pod, agent",
    go: "(1) Go linkerd-cni pattern: API + per-rule exec",
    perRule: "(2) per-rule exec (bash lower bound)",
    floor: "(3) floor: one iptables-restore in the netns",
    floorNftables: "(3) floor: one nft -f in the netns",
    tuning: "(4) Go chained plugin: tuning ADD",
    version: "(6) meshcni VERSION",
    goVersion: "(6) tuning VERSION",
  };

  try {
    // The nft floor writes what meshcni's nftables backend would: its CHECK passes on it.
    const same = await freshNetns();
    await execa("ip", ["netns", "exec", same, "nft", "-f", "-"], { input: nftText });
    const checked = await meshcni("CHECK", same, { mode: "nftables" });
    if (checked.exitCode !== 0) throw new Error(`the nft floor's rules are not meshcni's: ${checked.stdout}`);
    await dropNetns(same);

    for (let round = 0; round < warmup + iterations; round++) {
      const spaces = await Promise.all(Array.from({ length: 10 }, () => freshNetns()));
      const [agentNftables, viaAgent, meshed, nftables, plain, go, perRule, floor, floorNftables, tuned] = spaces as [string, ...string[]];
      record(names.addAgentNftables, await meshcni("ADD", agentNftables, { mode: "nftables", viaAgent: true }), round);
      record(names.addAgent, await meshcni("ADD", viaAgent!, { viaAgent: true }), round);
      record(names.add, await meshcni("ADD", meshed!), round);
      record(names.check, await meshcni("CHECK", meshed!), round);
      record(names.delNoAgent, await meshcni("DEL", meshed!), round);
      record(names.addNftables, await meshcni("ADD", nftables!, { mode: "nftables" }), round);
      record(names.checkNftables, await meshcni("CHECK", nftables!, { mode: "nftables" }), round);
      record(names.delNoAgentNftables, await meshcni("DEL", nftables!, { mode: "nftables" }), round);
      record(names.delNftables, await meshcni("DEL", agentNftables, { mode: "nftables", viaAgent: true }), round);
      record(names.del, await meshcni("DEL", viaAgent!, { viaAgent: true }), round);
      record(names.addPlain, await meshcni("ADD", plain!, { pod: "plain", viaAgent: true }), round);
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
    let answered = { p99: Number.NaN, max: Number.NaN };
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
      answerP99Ms: answered.p99,
      answerMaxMs: answered.max,
      cgroupPeakMb: ours.peakMb,
      goCgroupPeakMb: theirs.peakMb,
      goWallMs: theirs.wallMs,
    };

    const rows = Object.entries(samples).map(([name, list]) =>
      summarize(
        name,
        list.map((m) => m.ms),
      ),
    );
    const p50 = (name: string) => rows.find((row) => row.name === name)!.p50;
    const rssMb = Object.fromEntries(
      Object.entries(samples).map(([name, list]) => [name, Math.round(Math.max(...list.map((m) => m.rssKb)) / 102.4) / 10]),
    );
    const ratios = {
      "ADD with the agent (nft) / Go linkerd-cni pattern (1)": p50(names.addAgent) / p50(names.go),
      "ADD with the agent (nftables) / Go linkerd-cni pattern (1)": p50(names.addAgentNftables) / p50(names.go),
      "ADD with the agent (nft) / tuning ADD (4)": p50(names.addAgent) / p50(names.tuning),
      "ADD without the agent (nft) / Go linkerd-cni pattern (1)": p50(names.add) / p50(names.go),
      "ADD with the agent (nftables) / nft floor (3)": p50(names.addAgentNftables) / p50(names.floorNftables),
      "meshcni VERSION / tuning VERSION (6)": p50(names.version) / p50(names.goVersion),
    };
    const agentRss = Math.max(rssMb[names.addAgent]!, rssMb[names.addAgentNftables]!);
    const fastest = Math.min(p50(names.addAgent), p50(names.addAgentNftables));
    // Issue 22's targets: against the runtime's floor (a compiled Bun answering VERSION) and the Go stand-in.
    const version = p50(names.version);
    const within = (value: number, limit: number, of: number) => ({
      value: `${(value / of).toFixed(2)} (${value} vs ${of} ms)`,
      met: value <= limit * of,
    });
    const targets = [
      { target: "ADD p50 with the agent <= 1.3 x VERSION", ...within(fastest, 1.3, version) },
      { target: "ADD p50 with the agent <= 0.6 x Go linkerd-cni pattern", ...within(fastest, 0.6, p50(names.go)) },
      { target: "unmeshed ADD p50 with the agent <= 1.15 x VERSION", ...within(p50(names.addPlain), 1.15, version) },
      {
        target: "DEL p50 <= 1.5 x VERSION (both backends)",
        value: `${(Math.max(p50(names.del), p50(names.delNftables)) / version).toFixed(2)} (${p50(names.del)} nft, ${p50(names.delNftables)} nftables vs ${version} ms)`,
        met: Math.max(p50(names.del), p50(names.delNftables)) <= 1.5 * version,
      },
      { target: "peak RSS of a plugin process on the agent path <= 38 MB", value: `${agentRss} MB`, met: agentRss <= 38 },
      {
        target: `${concurrentPods} concurrent ADDs beside a CPU hog: 0 failures`,
        value: `${concurrency.failures}; node memory ${concurrency.cgroupPeakMb} MB (Go: ${concurrency.goCgroupPeakMb} MB)`,
        met: concurrency.failures === 0,
      },
    ];

    printTable(`meshcni as a plugin (compiled binary, real netns; ${iterations} runs after ${warmup} warm-up, interleaved)`, rows);
    console.log(`\n${"peak RSS".padEnd(48)}MB`);
    for (const [name, mb] of Object.entries(rssMb)) console.log(`${name.padEnd(48)}${mb}`);
    console.log(`\nratios of p50`);
    for (const [name, ratio] of Object.entries(ratios)) console.log(`${name.padEnd(48)}${ratio.toFixed(2)}`);
    console.log(
      `\n${concurrentPods} ADDs at once through the agent, beside ${hogs} busy loops: ${concurrency.wallMs} ms to all done, ${concurrency.failures} failures, ` +
        `${concurrency.askedApi} asked the API (no answer from the agent within its ${agentTimeoutMs / 1000} s), ` +
        `${concurrency.wroteItself} wrote the rules themselves (the agent's writers busy past half that); ` +
        `memory charged to the burst's cgroup at its peak: ${concurrency.cgroupPeakMb} MB ` +
        `(the Go linkerd-cni pattern, ${concurrentPods} at once beside the same: ${concurrency.goCgroupPeakMb} MB, ${concurrency.goWallMs} ms)`,
    );
    for (const error of concurrency.failed) console.log(`  failed: ${error}`);
    console.log(
      `the agent answered 99% of the burst's ADDs within ${concurrency.answerP99Ms} ms and all within ${concurrency.answerMaxMs} ms ` +
        `(meshcni_plugin_answer_duration_seconds' buckets; the plugin waits ${agentTimeoutMs} ms, a write must start within half that)`,
    );
    console.log(
      `the agent's ${concurrency.writers.count} writers after it (outside the burst's cgroup): ${concurrency.writers.anonymous} MB anonymous in all, ` +
        `peak RSS ${concurrency.writers.peakRss} MB each at most (most of it the binary's pages, which the agent maps too)`,
    );
    console.log(`\ntargets`);
    for (const target of targets) console.log(`${target.met ? "met   " : "MISSED"}  ${target.target.padEnd(44)}${target.value}`);
    const result = { rows, rssMb, ratios, concurrency, targets };
    console.log(`results: ${saveResults("plugin", result)}`);
    return result;
  } finally {
    await agent.cleanup();
    await Promise.all([...liveNetns].map(dropNetns));
    cleanupMeasure();
    await execa("umount", [stateDir], { reject: false });
    await api.stop();
  }
}
