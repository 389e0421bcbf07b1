import { join } from "node:path";
import { expect, it } from "vitest";
import { suiteCluster } from "../kit/cluster/suite.js";
import { projectRoot } from "../kit/paths.js";
import { describeAsRoot } from "../kit/root-suites.js";
import { replayCommand } from "../kit/soak/draw.js";
import { formatReport } from "../kit/soak/report.js";
import { fixedDraws } from "../kit/soak/seeds.js";
import { soak } from "../kit/soak/soak.js";

/**
 * The short soak: each fixed draw of test/kit/soak/seeds.ts (seeds that pass, one found a
 * race), its faults one at a time under a load of meshed and unmeshed pods. A violation names
 * the `npm run soak` command that replays it; `npm run soak` draws new seeds.
 */
describeAsRoot("the short soak on the real cluster", () => {
  const cluster = suiteCluster();

  for (const draw of fixedDraws) {
    it(`holds every invariant through seed ${draw.seed}'s ${draw.faults} faults (${draw.why})`, async () => {
      const logsDir = join(projectRoot, "bench/results");
      const report = await soak(cluster, { draw, logsDir, log: (line) => console.log(line) });
      console.log(formatReport(report));
      expect(report.run.length).toBe(draw.faults);
      expect(report.checks.connections).toBeGreaterThan(0);
      expect(report.violations, `replay: ${replayCommand(draw, draw.faults)}`).toEqual([]);
    }, 1_200_000);
  }
});
