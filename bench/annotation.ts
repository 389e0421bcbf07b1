// The largest annotation's section: what one pod whose skip-subnets lists as many CIDRs as
// meshcni allows costs its ADD and the audit of it (the sweep's own code, run by `meshcni
// audit`): wall time, CPU time and peak RSS of each process. Any user who may create a pod
// sets its annotations, so this is what one tenant can make a node pay per pod.
// MESHCNI_BENCH_ANNOTATION_ENTRIES measures another count (past the cap, ADD is refused).
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { maxAnnotationTokens } from "../src/mesh/tokens.js";
import { conflist } from "../test/kit/agent/host.js";
import { FakeApiServer, podObject } from "../test/kit/api/server.js";
import { TestNetwork } from "../test/kit/netns/network.js";
import { meshcniBinary } from "../test/kit/paths.js";
import { saveResults } from "./stats.js";

const runs = 5;
const node = "annotation-node";

interface Run {
  wallMs: number;
  cpuMs: number;
  maxRssMb: number;
  exitCode: number;
  stdout: string;
}

/** The process's peak RSS so far (VmHWM, MB), while it runs; 0 once it is gone. */
function peakRssMb(pid: number): number {
  try {
    const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return kb ? Number(kb) / 1024 : 0;
  } catch {
    return 0;
  }
}

/**
 * Runs the compiled binary to its end (async: the in-test API server answers from this
 * process). Its peak RSS is its own VmHWM, read every 2 ms while it runs: the rusage a spawn
 * gives counts the pages of this process its fork copied before the exec.
 */
async function run(args: string[], env: Record<string, string>, stdin = ""): Promise<Run> {
  const started = performance.now();
  const child = Bun.spawn([meshcniBinary, ...args], {
    env: { PATH: process.env.PATH ?? "", ...env },
    stdin: Buffer.from(stdin),
    stdout: "pipe",
    stderr: "ignore",
  });
  let maxRssMb = 0;
  const poll = setInterval(() => {
    maxRssMb = Math.max(maxRssMb, peakRssMb(child.pid));
  }, 2);
  const stdout = await new Response(child.stdout).text();
  const exitCode = await child.exited;
  clearInterval(poll);
  const wallMs = performance.now() - started;
  const usage = child.resourceUsage()!;
  const cpuMs = Number(usage.cpuTime.user + usage.cpuTime.system) / 1000;
  return { wallMs, cpuMs, maxRssMb, exitCode, stdout };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

function line(what: string, samples: Run[]): Record<string, number | string> {
  const figures = {
    case: what,
    wallMs: median(samples.map((sample) => sample.wallMs)),
    cpuMs: median(samples.map((sample) => sample.cpuMs)),
    maxRssMb: Math.max(...samples.map((sample) => sample.maxRssMb)),
  };
  console.log(
    `${what.padEnd(56)}${figures.wallMs.toFixed(1).padStart(10)}${figures.cpuMs.toFixed(1).padStart(10)}${figures.maxRssMb.toFixed(1).padStart(10)}`,
  );
  return figures;
}

export async function benchAnnotation(): Promise<void> {
  const entries = Number(process.env.MESHCNI_BENCH_ANNOTATION_ENTRIES ?? maxAnnotationTokens);
  const api = new FakeApiServer();
  const net = new TestNetwork(61);
  try {
    await api.start();
    const kubeconfig = api.writeKubeconfig();
    const conf = {
      cniVersion: "1.0.0",
      name: "annotation",
      type: "meshcni",
      state_dir: net.stateDir,
      kubernetes: { kubeconfig },
      linkerd: { "iptables-mode": "nft" },
    };
    const { cniVersion, name, ...entry } = conf;
    writeFileSync(join(net.confDir, "annotation.conflist"), conflist(name, [entry], { cniVersion }));
    const cidrs = Array.from({ length: entries }, (_, i) => `10.${(i >> 8) & 255}.${i & 255}.0/24`).join(",");
    const annotations = { "config.linkerd.io/skip-subnets": cidrs };
    api.addPod(podObject("tenant", "wide", { proxy: "container", nodeName: node, podIP: "10.250.0.1", owned: true, annotations }));
    const netns = await net.addNetns("wide");
    const cni = (command: string) => ({
      CNI_COMMAND: command,
      CNI_CONTAINERID: "wide",
      CNI_NETNS: net.netnsPath(netns),
      CNI_IFNAME: "eth0",
      CNI_ARGS: "K8S_POD_NAMESPACE=tenant;K8S_POD_NAME=wide",
    });
    const adds: Run[] = [];
    for (let i = 0; i < runs; i++) {
      if (i > 0) await run([], cni("DEL"), JSON.stringify(conf));
      adds.push(await run([], cni("ADD"), JSON.stringify(conf)));
    }
    console.log(`\none pod's skip-subnets with ${entries} CIDRs (the cap is ${maxAnnotationTokens}), median of ${runs}`);
    console.log(`${"case".padEnd(56)}${"wall ms".padStart(10)}${"cpu ms".padStart(10)}${"RSS MB".padStart(10)}`);
    const results = [line("ADD (the plugin alone, iptables nft)", adds)];
    if (adds.some((add) => add.exitCode !== 0)) {
      console.log(`ADD refused: ${adds[0]!.stdout.trim()}`);
    } else {
      const audits: Run[] = [];
      for (let i = 0; i < runs; i++) {
        const args = ["audit", "--node", node, "--kubeconfig", kubeconfig, "--state-dir", net.stateDir, "--net-dir", net.confDir];
        audits.push(await run([...args, "--output", "json"], {}));
      }
      const status = (JSON.parse(audits[0]!.stdout) as { pods: Array<{ status: string }> }).pods[0]?.status;
      results.push(line(`meshcni audit of that pod (the sweep's code): ${status}`, audits));
    }
    console.log(`results: ${saveResults("annotation", { entries, results })}`);
  } finally {
    await net.cleanup();
    await api.stop();
  }
}
