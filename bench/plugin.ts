// The plugin's section (issue 5): what a pod start pays for meshcni, side by side with
// the alternatives, interleaved in one run so the ratios hold on a noisy machine.
import { join } from "node:path";
import type { V1Pod } from "@kubernetes/client-node";
import { execa } from "execa";
import { planRules } from "../src/iptables/plan.js";
import { renderApply } from "../src/iptables/restore.js";
import { parseNatTable } from "../src/iptables/save.js";
import { parseNetConf } from "../src/mesh/netconf.js";
import { firewallSpecFor } from "../src/mesh/pod.js";
import { FakeApiServer, podObject } from "../test/kit/api-server.js";
import { meshcniNetconf, podArgs } from "../test/kit/common.js";
import { meshcniBinary } from "../test/kit/network.js";
import { cleanupMeasure, type Measured, measure } from "./measure.js";
import { printTable, type Summary, saveResults, summarize } from "./stats.js";

const warmup = 3;
const iterations = 30;
const concurrentPods = 50;
const backend = "nft";
const tuning = "/usr/lib/cni/tuning";
const perRuleScript = join(import.meta.dirname, "baselines/linkerd-per-rule.sh");

/** The default meshed pod's rules, as the per-rule baseline and the floor apply them. */
const meshedPod = podObject("bench", "meshed", { proxy: "container" });
const plan = planRules(
  firewallSpecFor(
    parseNetConf(JSON.stringify({ cniVersion: "1.0.0", name: "bench", type: "meshcni" })).linkerd,
    meshedPod as V1Pod,
    undefined,
    443,
  ),
  "ipv4",
);
const restoreText = renderApply(plan, parseNatTable(""));
const perRuleLines = [
  ...Object.keys(plan.chains).map((chain) => `-N ${chain}`),
  ...Object.entries(plan.chains).flatMap(([chain, rules]) => rules.map((args) => `-A ${chain} ${args.join(" ")}`)),
  ...plan.jumps.map((jump) => `-A ${jump.from} ${jump.args.join(" ")}`),
].join("\n");

/** The same rules for nft, as meshcni's nftables backend writes them (checked below: CHECK passes on them). */
const nftText = `table ip meshcni {
  chain PROXY_INIT_REDIRECT {
    tcp dport { 4191, 4190 } return comment "proxy-init/ignore-port-4191,4190"
    meta l4proto tcp redirect to :4143 comment "proxy-init/redirect-all-incoming-to-proxy-port"
  }
  chain PROXY_INIT_OUTPUT {
    meta skuid 2102 return comment "proxy-init/ignore-proxy-user-id"
    oifname "lo" return comment "proxy-init/ignore-loopback"
    meta l4proto tcp redirect to :4140 comment "proxy-init/redirect-all-outgoing-to-proxy-port"
  }
  chain PREROUTING {
    type nat hook prerouting priority -100; policy accept;
    jump PROXY_INIT_REDIRECT comment "proxy-init/install-proxy-init-prerouting"
  }
  chain OUTPUT {
    type nat hook output priority -100; policy accept;
    jump PROXY_INIT_OUTPUT comment "proxy-init/install-proxy-init-output"
  }
}
`;

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
  concurrency: { pods: number; wallMs: number; failures: number; peakTotalRssMb: number };
  targets: Array<{ target: string; value: string; met: boolean }>;
}

export async function benchPlugin(): Promise<PluginBench> {
  const api = await new FakeApiServer().start();
  const kubeconfig = api.writeKubeconfig();
  api.addPod(meshedPod);
  api.addPod(podObject("bench", "plain"));
  const stateDir = join(api.dir, "state");
  const prevResult = { cniVersion: "1.0.0", interfaces: [{ name: "eth0" }], ips: [{ address: "10.253.0.2/24", interface: 0 }] };
  const conf = (mode: string) =>
    JSON.stringify(meshcniNetconf({ stateDir, kubeconfig, name: "bench", linkerd: { "iptables-mode": mode } }, { prevResult }));
  const cniEnv = (command: string, netns: string, pod: string) => ({
    PATH: process.env.PATH ?? "",
    CNI_COMMAND: command,
    CNI_CONTAINERID: `bench-${netns}`,
    CNI_NETNS: netnsPath(netns),
    CNI_IFNAME: "eth0",
    CNI_ARGS: `IgnoreUnknown=1;${podArgs("bench", pod)}`,
    CNI_PATH: "/usr/lib/cni",
  });
  const meshcni = (command: string, netns: string, pod = "meshed", mode = backend) =>
    measure(meshcniBinary, [], { env: cniEnv(command, netns, pod), input: conf(mode) });
  const tuningConf = JSON.stringify({ cniVersion: "1.0.0", name: "bench", type: "tuning", prevResult });

  const samples: Record<string, Measured[]> = {};
  const record = (name: string, measured: Measured, round: number) => {
    if (measured.exitCode !== 0) throw new Error(`${name} failed: ${measured.stdout}`);
    if (round < warmup) return;
    samples[name] ??= [];
    samples[name].push(measured);
  };
  const names = {
    add: "meshcni ADD, meshed pod (API lookup, nft)",
    check: "meshcni CHECK, meshed pod",
    del: "meshcni DEL, meshed pod",
    addPlain: "meshcni ADD, unmeshed pod",
    addAuto: "meshcni ADD, meshed pod, iptables-mode auto",
    addNftables: "meshcni ADD, meshed pod (API lookup, nftables)",
    checkNftables: "meshcni CHECK, meshed pod, nftables",
    delNftables: "meshcni DEL, meshed pod, nftables",
    perRule: "(2) per-rule exec, Linkerd's pattern",
    floor: "(3) floor: one iptables-restore in the netns",
    floorNftables: "(3) floor: one nft -f in the netns",
    go: "(4) Go chained plugin: tuning ADD",
    version: "(6) meshcni VERSION",
    goVersion: "(6) tuning VERSION",
  };

  try {
    // The nft floor writes what meshcni's nftables backend would: its CHECK passes on it.
    const same = await freshNetns();
    await execa("ip", ["netns", "exec", same, "nft", "-f", "-"], { input: nftText });
    const checked = await meshcni("CHECK", same, "meshed", "nftables");
    if (checked.exitCode !== 0) throw new Error(`the nft floor's rules are not meshcni's: ${checked.stdout}`);
    await dropNetns(same);

    for (let round = 0; round < warmup + iterations; round++) {
      const [meshed, plain, auto, perRule, floor, go, nftables, floorNftables] = await Promise.all(
        [1, 2, 3, 4, 5, 6, 7, 8].map(() => freshNetns()),
      );
      record(names.add, await meshcni("ADD", meshed!), round);
      record(names.check, await meshcni("CHECK", meshed!), round);
      record(names.del, await meshcni("DEL", meshed!), round);
      record(names.addNftables, await meshcni("ADD", nftables!, "meshed", "nftables"), round);
      record(names.checkNftables, await meshcni("CHECK", nftables!, "meshed", "nftables"), round);
      record(names.delNftables, await meshcni("DEL", nftables!, "meshed", "nftables"), round);
      record(names.floorNftables, await measure("ip", ["netns", "exec", floorNftables!, "nft", "-f", "-"], { input: nftText }), round);
      record(names.addPlain, await meshcni("ADD", plain!, "plain"), round);
      record(names.addAuto, await meshcni("ADD", auto!, "meshed", "auto"), round);
      record(names.perRule, await measure(perRuleScript, [netnsPath(perRule!), backend], { input: perRuleLines }), round);
      record(
        names.floor,
        await measure("nsenter", [`--net=${netnsPath(floor!)}`, `iptables-${backend}-restore`, "--noflush"], { input: restoreText }),
        round,
      );
      record(names.go, await measure(tuning, [], { env: cniEnv("ADD", go!, "meshed"), input: tuningConf }), round);
      record(names.version, await measure(meshcniBinary, [], { env: { CNI_COMMAND: "VERSION" }, input: "{}" }), round);
      record(names.goVersion, await measure(tuning, [], { env: { CNI_COMMAND: "VERSION" }, input: "{}" }), round);
      await Promise.all([meshed, plain, auto, perRule, floor, go, nftables, floorNftables].map((name) => dropNetns(name!)));
    }

    const concurrent = await Promise.all(Array.from({ length: concurrentPods }, () => freshNetns()));
    const started = performance.now();
    const results = await Promise.all(concurrent.map((netns) => meshcni("ADD", netns)));
    const concurrency = {
      pods: concurrentPods,
      wallMs: Math.round(performance.now() - started),
      failures: results.filter((result) => result.exitCode !== 0).length,
      peakTotalRssMb: Math.round(results.reduce((sum, result) => sum + result.rssKb, 0) / 1024),
    };
    await Promise.all(concurrent.map(dropNetns));

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
      "meshcni ADD / per-rule exec (2)": p50(names.add) / p50(names.perRule),
      "meshcni ADD / floor (3)": p50(names.add) / p50(names.floor),
      "meshcni ADD / Go plugin (4)": p50(names.add) / p50(names.go),
      "meshcni ADD nftables / nft floor (3)": p50(names.addNftables) / p50(names.floorNftables),
      "meshcni ADD nftables / ADD nft (iptables)": p50(names.addNftables) / p50(names.add),
      "meshcni VERSION / Go VERSION (6)": p50(names.version) / p50(names.goVersion),
    };
    const meshcniRss = Math.max(
      ...[names.add, names.check, names.del, names.addPlain, names.addNftables, names.checkNftables, names.delNftables].map(
        (name) => rssMb[name]!,
      ),
    );
    const targets = [
      {
        target: "meshed ADD p50 <= 0.7 x per-rule exec",
        value: ratios["meshcni ADD / per-rule exec (2)"].toFixed(2),
        met: ratios["meshcni ADD / per-rule exec (2)"] <= 0.7,
      },
      {
        target: "meshed ADD p50 <= 3 x floor",
        value: ratios["meshcni ADD / floor (3)"].toFixed(2),
        met: ratios["meshcni ADD / floor (3)"] <= 3,
      },
      { target: "CHECK p50 <= ADD p50", value: `${p50(names.check)} vs ${p50(names.add)} ms`, met: p50(names.check) <= p50(names.add) },
      {
        target: "nftables ADD p50 <= 3 x nft floor",
        value: ratios["meshcni ADD nftables / nft floor (3)"].toFixed(2),
        met: ratios["meshcni ADD nftables / nft floor (3)"] <= 3,
      },
      {
        target: "nftables ADD p50 <= iptables (nft) ADD p50",
        value: `${p50(names.addNftables)} vs ${p50(names.add)} ms`,
        met: p50(names.addNftables) <= p50(names.add),
      },
      {
        target: "DEL p50 <= 2 x startup (VERSION)",
        value: `${p50(names.del)} vs ${p50(names.version)} ms`,
        met: p50(names.del) <= 2 * p50(names.version),
      },
      { target: "peak RSS of one plugin process <= 50 MB", value: `${meshcniRss} MB`, met: meshcniRss <= 50 },
      { target: `${concurrentPods} concurrent ADDs: 0 failures`, value: String(concurrency.failures), met: concurrency.failures === 0 },
    ];

    printTable(
      `meshcni as a plugin (compiled binary, real netns, ${backend}; ${iterations} runs after ${warmup} warm-up, interleaved)`,
      rows,
    );
    console.log(`\n${"peak RSS".padEnd(48)}MB`);
    for (const [name, mb] of Object.entries(rssMb)) console.log(`${name.padEnd(48)}${mb}`);
    console.log(`\nratios of p50`);
    for (const [name, ratio] of Object.entries(ratios)) console.log(`${name.padEnd(48)}${ratio.toFixed(2)}`);
    console.log(
      `\n${concurrentPods} ADDs at once: ${concurrency.wallMs} ms to all done, ${concurrency.failures} failures, peak total RSS ${concurrency.peakTotalRssMb} MB (sum of each process's peak)`,
    );
    console.log(`\ntargets`);
    for (const target of targets) console.log(`${target.met ? "met   " : "MISSED"}  ${target.target.padEnd(44)}${target.value}`);
    const result = { rows, rssMb, ratios, concurrency, targets };
    console.log(`results: ${saveResults("plugin", result)}`);
    return result;
  } finally {
    await Promise.all([...liveNetns].map(dropNetns));
    cleanupMeasure();
    await api.stop();
  }
}
