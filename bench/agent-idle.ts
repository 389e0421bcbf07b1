// `npm run bench agent-idle` (issue 59): where the idle agent's CPU goes. A node of 30 meshed
// pods in real netns, started through the agent's chain (the in-test API server, a stand-in
// CRI that names each pod's netns); the agent then left alone and its CPU read from /proc
// (itself, its children still running, its writers, and those it waited for: sweeps) over a window, once with its
// sweep every 60 s (as deployed), once with none in the window (the sweep's share), and a
// third time under Bun's own sampling profiler (BUN_OPTIONS --cpu-prof-md), whose heaviest
// functions it prints. The first two read a window right after the node went idle and one
// once the agent is agedSeconds old: the first minutes carry the JIT's warm-up (its compiler
// threads), which an agent running for days has long paid; the target is read on the second.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { AgentHarness } from "../test/kit/agent/harness.js";
import { FakeApiServer, podObject } from "../test/kit/api/server.js";
import { agentTemplate, sleep, until } from "../test/kit/common.js";
import { TestNetwork } from "../test/kit/netns/network.js";
import { treeCpuTicks } from "../test/kit/proc.js";
import { saveResults } from "./stats.js";

const node = "idle-node";
const pods = 30;
const windowSeconds = 120;
const settleSeconds = 20;
const agedSeconds = 360;

/** One window: the agent and its children (reaped or still running), mCPU; its main thread's wakes a second; its full sweeps in it. */
interface IdleFigures {
  millicores: number;
  wakesPerSecond: number;
  /** Those that ran their process, and those its writer's look answered (nothing moved). */
  sweeps: { processes: number; looks: number };
}

export interface AgentIdle {
  pods: number;
  windowSeconds: number;
  agedSeconds: number;
  /** As deployed (a sweep every 60 s) and with no sweep: right after the node went idle, and once the agent is agedSeconds old. */
  deployed: { early: IdleFigures; aged: IdleFigures };
  noSweep: { early: IdleFigures; aged: IdleFigures };
  /** How the agent chained itself (its net dir is polled every 100 ms in the conflist mode, every second by drop-in). */
  chainMode: string;
  /** The profile's heaviest lines (self time), as Bun's markdown profile gives them. */
  profileTop: string[];
}

/** Times the agent's main thread was woken (its voluntary context switches: each timer, poll or event). */
const wakes = (pid: number) =>
  Number(/^voluntary_ctxt_switches:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/task/${pid}/status`, "utf8"))?.[1]);

/** Runs the agent on a node of `pods` meshed pods with `extra` flags and `env`: its CPU over a window (mCPU), its main thread's wakes a second, its chain mode. */
async function idleWindow(
  extra: string[],
  steady: boolean,
  env: NodeJS.ProcessEnv = {},
  untilAged = true,
): Promise<{ early: IdleFigures; aged: IdleFigures; chainMode: string }> {
  const api = await new FakeApiServer().start();
  const net = new TestNetwork(61);
  const host = new AgentHarness({ onHost: true });
  try {
    api.addNode({ metadata: { name: node }, spec: {} });
    writeFileSync(host.path("10-primary.conflist"), JSON.stringify(net.primaryConflist("primary")));
    api.addPod(podObject("meshcni", "agent-self", { proxy: false, nodeName: node, podIP: "10.251.0.250", daemonSet: "meshcni" }));
    // The node's iptables backend as kubelet's chains decide it on a real node (its KUBE-IPTABLES-HINT), kept where the plugin
    // keeps it: this host has no kubelet, and without it every sweep would probe the host's four save binaries (~15 ms each time).
    mkdirSync(net.stateDir, { recursive: true });
    writeFileSync(join(net.stateDir, "iptables-backend"), "nft\n");
    const template = agentTemplate(net.stateDir);
    const args = ["--template", template, "--node", node, "--state-dir", net.stateDir, "--cri-socket", await net.criSocket()];
    // The DaemonSet's resync (the flag's default, 10 s), not the harness's 60 s.
    const agentStarted = performance.now();
    await host.startWithApi(api, [...args, "--resync-seconds", "10", ...extra], {
      POD_NAMESPACE: "meshcni",
      POD_NAME: "agent-self",
      ...env,
    });
    await host.waitFor(async () => (await host.readyz()).status === 200, 20_000);
    const dirs = { conf: host.netDir, bin: host.binDir };
    for (let i = 0; i < pods; i++) await net.startPod(api, { namespace: "shop", name: `idle-${i}`, network: "primary", node, dirs });
    await sleep(settleSeconds * 1000);
    // Sweeping: the window starts once a full sweep was its writer's look (the one after the pods started runs its process).
    // Asked once a second: each scrape renders every metric, and a tight loop of them would be the CPU measured next.
    const looked = async () => ((await host.metric("meshcni_audit_unchanged_total")) ?? 0) >= 1;
    if (steady) await until(looked, 150_000, 1000);
    const pid = host.pid!;
    const ticksPerSecond = Number((await execa("getconf", ["CLK_TCK"])).stdout);
    const audits = async () => [
      await host.metric("meshcni_audit_duration_seconds_count"),
      await host.metric("meshcni_audit_unchanged_total"),
    ];
    const window = async (): Promise<IdleFigures> => {
      const [before, wokenBefore, started, auditsBefore] = [treeCpuTicks(pid), wakes(pid), performance.now(), await audits()];
      await sleep(windowSeconds * 1000);
      const [all, looks] = (await audits()).map((count, i) => (count ?? 0) - (auditsBefore[i] ?? 0)) as [number, number];
      const seconds = (performance.now() - started) / 1000;
      const millicores = ((treeCpuTicks(pid) - before) / ticksPerSecond / seconds) * 1000;
      return { millicores, wakesPerSecond: (wakes(pid) - wokenBefore) / seconds, sweeps: { processes: all - looks, looks } };
    };
    const early = await window();
    if (untilAged) await sleep(Math.max(0, agedSeconds * 1000 - (performance.now() - agentStarted)));
    const aged = untilAged ? await window() : early;
    const chainMode = /^meshcni_chain_mode\{[^}]*mode="([^"]+)"[^}]*\} 1$/m.exec(await host.scrape())?.[1] ?? "?";
    return { early, aged, chainMode };
  } finally {
    await host.stop("SIGTERM").catch(() => undefined);
    await host.cleanup();
    await net.cleanup();
    await api.stop();
  }
}

/** The heaviest functions by self time in a Bun markdown CPU profile. */
function profileTop(dir: string): string[] {
  const file = readdirSync(dir).find((name) => name.endsWith(".md"));
  if (!file) return ["(no profile written)"];
  const lines = readFileSync(join(dir, file), "utf8").split("\n");
  const table = lines.findIndex((line) => /self/i.test(line) && line.startsWith("|"));
  return table < 0 ? lines.slice(0, 40) : lines.slice(table, table + 27);
}

export async function benchAgentIdle(): Promise<AgentIdle> {
  const { chainMode, ...deployed } = await idleWindow(["--audit-seconds", "60"], true);
  const { chainMode: _, ...noSweep } = await idleWindow(["--audit-seconds", "3600"], false);
  const dir = mkdtempSync(join(tmpdir(), "meshcni-prof-"));
  try {
    // The agent itself, profiled (its children started without the option: BUN_OPTIONS is the agent's env alone).
    await idleWindow(["--audit-seconds", "60"], false, { BUN_OPTIONS: `--cpu-prof-md --cpu-prof-dir=${dir}` }, false);
    const result: AgentIdle = {
      pods,
      windowSeconds,
      agedSeconds,
      deployed,
      noSweep,
      chainMode,
      profileTop: profileTop(dir),
    };
    console.log(
      `\nthe idle agent on a node of ${pods} meshed pods (chained: ${result.chainMode}), over ${windowSeconds} s (itself, its writers and its reaped children):`,
    );
    const said = ({ millicores, wakesPerSecond }: IdleFigures) => `${millicores.toFixed(2)} mCPU, ${wakesPerSecond.toFixed(1)} wakes/s`;
    const sweeps = ({ sweeps: { processes, looks } }: IdleFigures) => `${processes} sweep processes, ${looks} looks`;
    for (const [name, run] of [
      ["as deployed (a sweep every 60 s)", result.deployed],
      ["no sweep in the window          ", result.noSweep],
    ] as const) {
      console.log(`  ${name}: once idle ${said(run.early)}; at ${agedSeconds} s old ${said(run.aged)} (${sweeps(run.aged)})`);
    }
    const aged = result.deployed.aged.millicores;
    console.log(`  target: <= 2 mCPU as deployed, the agent ${agedSeconds} s old: ${aged <= 2 ? "met" : "MISSED"}`);
    console.log("\nthe agent's own profile, heaviest by self time:");
    for (const line of result.profileTop) console.log(line);
    console.log(`\nresults: ${saveResults("agent-idle", result)}`);
    return result;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
