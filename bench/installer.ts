// The installer's section: how fast the agent puts meshcni back after the primary CNI
// rewrites its config in place (Calico's way), and how long it takes to become ready.
import { writeFileSync } from "node:fs";
import { AgentHarness } from "../test/kit/agent/harness.js";
import { conflist } from "../test/kit/agent/host.js";
import { sleep } from "../test/kit/common.js";
import { printTable, type Summary, saveResults, summarize } from "./stats.js";

const rewrites = 50;
/** Below the agent's fight threshold (20 in 10 s), as a real primary CNI's rewrites are. */
const rewriteGapMs = 700;
const starts = 10;
const primary = (revision: number) => conflist("k8s-pod-network", [{ type: "calico", revision }, { type: "portmap" }]);

/** Spins until the condition holds and returns the milliseconds it took. */
async function until(condition: () => boolean, from = performance.now()): Promise<number> {
  while (!condition()) await new Promise((resolve) => setImmediate(resolve));
  return performance.now() - from;
}

export async function benchInstaller(): Promise<Summary[]> {
  const host = new AgentHarness();
  const chained = () => host.types("10-calico.conflist").at(-1) === "meshcni";
  try {
    writeFileSync(host.path("10-calico.conflist"), primary(0));
    const readyAfterStart: number[] = [];
    const readyAfterRestart: number[] = [];
    for (let i = 0; i < starts; i++) {
      const started = performance.now();
      await host.start();
      await host.waitFor(async () => (await host.readyz()).status === 200, 10_000);
      (i === 0 ? readyAfterStart : readyAfterRestart).push(performance.now() - started);
      await host.stop("SIGKILL");
    }
    await host.start();
    // Ready: its first look at the net dir is done, so each rewrite below is one it sees as a re-chain.
    await host.waitFor(async () => (await host.readyz()).status === 200, 10_000);
    const latencies: number[] = [];
    for (let i = 1; i <= rewrites; i++) {
      const written = performance.now();
      host.writeInPlace("10-calico.conflist", primary(i));
      latencies.push(await until(chained, written));
      await sleep(rewriteGapMs);
    }
    const agentReported = await host.metric('meshcni_rechains_total{cause="entry_removed"}');
    if (agentReported !== rewrites) throw new Error(`the agent counted ${agentReported} re-chains for ${rewrites} rewrites`);
    const rows = [
      summarize(`re-chain after an in-place rewrite (x${rewrites})`, latencies),
      summarize("ready after first start (copies the binary)", readyAfterStart),
      summarize(`ready after restart (x${starts - 1})`, readyAfterRestart),
    ];
    printTable("meshcni install (temp dirs, compiled binary)", rows);
    console.log(`results: ${saveResults("installer", rows)}`);
    return rows;
  } finally {
    await host.cleanup();
  }
}
