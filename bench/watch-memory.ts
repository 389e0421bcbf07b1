// `npm run bench watch-memory` (issue 59): what one node's watches cost the real API server's
// memory, by the set of watches (meshcni's agent's, kube-proxy's, parts of the agent's) and by
// how they are held (one HTTP/2 connection per component, or a connection per watch). For each
// case, in each round, the API server is started afresh (its memory only grows: what one case
// left must not count in the next), read at rest, then with `count` simulated components
// holding their watches (watch-holders.ts); what they added is divided by `count`. Goroutines
// are exact; the heap moves by several MB on its own, hence the rounds and their spread.

import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { RealCluster } from "../test/kit/cluster/cluster.js";
import { apiserverPort, nodeIp, paths } from "../test/kit/cluster/layout.js";
import { runningPid } from "../test/kit/cluster/processes.js";
import { sleep } from "../test/kit/common.js";
import { rssMb } from "../test/kit/proc.js";
import { apiserverRuntime, restartApiserver } from "./apiserver.js";
import { saveResults } from "./stats.js";
import { watchSets } from "./watch-sets.js";

const count = Number(process.env.MESHCNI_WATCH_HOLDERS ?? 250);
const rounds = Number(process.env.MESHCNI_WATCH_ROUNDS ?? 3);
const settleMs = 20_000;
const holdMs = 30_000;
const allCases: Array<{ key: string; set: keyof typeof watchSets; protocol: "h1" | "h2"; token?: true; label: string }> = [
  { key: "meshcni", set: "meshcni", protocol: "h2", label: "meshcni's 4 watches, one HTTP/2 connection (as it holds them now)" },
  {
    key: "meshcni-token",
    set: "meshcni",
    protocol: "h2",
    token: true,
    label: "the same, each component with its own ServiceAccount token",
  },
  { key: "meshcni-h1", set: "meshcni", protocol: "h1", label: "meshcni's 4 watches, a connection each (as before)" },
  { key: "kube-proxy", set: "kubeProxy", protocol: "h2", label: "kube-proxy's 4 watches, one HTTP/2 connection (client-go)" },
  { key: "pods", set: "podsByNode", protocol: "h2", label: "meshcni's pod watch alone (indexed by node)" },
  { key: "by-name", set: "byName", protocol: "h2", label: "meshcni's 3 watches by name alone" },
];
/** MESHCNI_WATCH_CASES: the cases to run, by key (all by default). */
const chosen = process.env.MESHCNI_WATCH_CASES?.split(",");
const cases = allCases.filter((entry) => !chosen || chosen.includes(entry.key));

interface Reading {
  heapMb: number;
  goroutines: number;
  rssMb: number;
}

async function metrics(cluster: RealCluster): Promise<Reading> {
  return {
    ...(await apiserverRuntime(cluster)),
    rssMb: rssMb(runningPid("kube-apiserver")!),
  };
}

/** The mean of six readings two seconds apart. */
async function sample(cluster: RealCluster): Promise<Reading> {
  const readings: Reading[] = [];
  for (let index = 0; index < 6; index++) {
    readings.push(await metrics(cluster));
    await sleep(2000);
  }
  const mean = (key: keyof Reading) => readings.reduce((sum, reading) => sum + reading[key], 0) / readings.length;
  return { heapMb: mean("heapMb"), goroutines: mean("goroutines"), rssMb: mean("rssMb") };
}

/** Holds `count` components' watches of one case while `during` runs; how many watches the server accepted. */
async function holding<T>(
  set: string,
  protocol: string,
  tokenFile: string | undefined,
  during: () => Promise<T>,
): Promise<{ result: T; accepted: number }> {
  const args = [
    join(import.meta.dirname, "watch-holders.ts"),
    set,
    protocol,
    String(count),
    `https://${nodeIp}:${apiserverPort}`,
    paths.pki,
  ];
  if (tokenFile) args.push(tokenFile);
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
  let accepted = 0;
  child.stdout.on("data", (chunk: Buffer) => (accepted = Number(String(chunk).trim().split("\n").at(-1))));
  try {
    return { result: await during(), accepted };
  } finally {
    child.kill();
    await new Promise((resolve) => child.once("exit", resolve));
  }
}

/**
 * A ServiceAccount token for each component, as each agent has its own (the account may do
 * anything: what is measured is the authentication, not the authorisation), in a file.
 */
async function componentTokens(cluster: RealCluster): Promise<string> {
  await cluster.kubectl(["create", "serviceaccount", "watch-bench"]);
  await cluster.kubectl([
    "create",
    "clusterrolebinding",
    "watch-bench",
    "--clusterrole=cluster-admin",
    "--serviceaccount=default:watch-bench",
  ]);
  const tokens: string[] = [];
  while (tokens.length < count)
    tokens.push(
      ...(await Promise.all(Array.from({ length: 10 }, () => cluster.kubectl(["create", "token", "watch-bench", "--duration", "2h"])))).map(
        (token) => token.trim(),
      ),
    );
  const file = join(mkdtempSync(join(tmpdir(), "meshcni-watch-tokens-")), "tokens");
  writeFileSync(file, `${tokens.slice(0, count).join("\n")}\n`, { mode: 0o600 });
  return file;
}

export async function benchWatchMemory(): Promise<void> {
  const cluster = new RealCluster();
  await cluster.up();
  const perCase = cases.map(() => [] as Reading[]);
  let tokenFile: string | undefined;
  try {
    tokenFile = cases.some((entry) => entry.token) ? await componentTokens(cluster) : undefined;
    for (let round = 1; round <= rounds; round++)
      for (const [index, { set, protocol, token, label }] of cases.entries()) {
        await restartApiserver(cluster);
        await sleep(settleMs);
        const before = await sample(cluster);
        const { result: during, accepted } = await holding(set, protocol, token ? tokenFile : undefined, async () => {
          await sleep(holdMs);
          return sample(cluster);
        });
        const added = {
          heapMb: ((during.heapMb - before.heapMb) * 1000) / count,
          goroutines: (during.goroutines - before.goroutines) / count,
          rssMb: ((during.rssMb - before.rssMb) * 1000) / count,
        };
        perCase[index]!.push(added);
        const expected = count * watchSets[set]("n").length;
        console.log(
          `round ${round}: ${label}: ${accepted}/${expected} watches; per component heap ${added.heapMb.toFixed(0)} kB, RSS ${added.rssMb.toFixed(0)} kB, ${added.goroutines.toFixed(1)} goroutines`,
        );
      }
  } finally {
    // Tokens of a cluster-admin account, valid for two hours: not left behind.
    if (tokenFile) rmSync(dirname(tokenFile), { recursive: true, force: true });
    await cluster.down();
  }
  console.log(`\nwhat one component's watches add to the API server (${count} components, ${rounds} rounds: mean, min..max)`);
  const spread = (values: number[], digits: number) =>
    `${(values.reduce((sum, value) => sum + value, 0) / values.length).toFixed(digits)} (${Math.min(...values).toFixed(digits)}..${Math.max(...values).toFixed(digits)})`;
  const table = cases.map(({ label }, index) => {
    const readings = perCase[index]!;
    return {
      label,
      heapKb: spread(
        readings.map((reading) => reading.heapMb),
        0,
      ),
      rssKb: spread(
        readings.map((reading) => reading.rssMb),
        0,
      ),
      goroutines: spread(
        readings.map((reading) => reading.goroutines),
        1,
      ),
    };
  });
  for (const row of table) console.log(`${row.label.padEnd(70)} heap ${row.heapKb} kB, RSS ${row.rssKb} kB, goroutines ${row.goroutines}`);
  console.log(`results: ${saveResults("watch-memory", { count, rounds, holdMs, cases: table, readings: perCase })}`);
}
