// The audit's section: `meshcni audit` of a node with 200 meshed pods, each a real
// netns whose rules are read back and compared with its recorded plan.
import { PodFleet } from "../test/kit/audit/fleet.js";
import { printTable, type Summary, saveResults, summarize } from "./stats.js";

const pods = 200;
const runs = 10;

export async function benchAudit(): Promise<Summary[]> {
  const fleet = new PodFleet();
  try {
    await fleet.start(pods);
    const times: number[] = [];
    for (let i = 0; i < runs; i++) {
      const started = performance.now();
      const result = await fleet.audit();
      times.push(performance.now() - started);
      const { summary } = JSON.parse(result.stdout) as { summary: { protected: number } };
      if (result.exitCode !== 0 || summary.protected !== pods)
        throw new Error(`audit run ${i} did not find ${pods} protected pods: ${result.stdout}`);
    }
    const rows = [summarize(`meshcni audit, ${pods} protected pods (x${runs})`, times)];
    printTable("meshcni audit (compiled binary, real netns, in-test API server)", rows);
    console.log(`results: ${saveResults("audit", rows)}`);
    return rows;
  } finally {
    await fleet.stop();
  }
}
