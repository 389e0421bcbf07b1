// The soak's report in words: faults by kind with their recovery times, every violation
// with the seed and the fault's index to replay it, the agent's memory over the run.
import { faultKinds, replayCommand } from "./draw.js";
import type { SoakReport } from "./soak.js";

export function formatReport(report: SoakReport): string {
  const lines = [
    `soak, seed ${report.draw.seed}: ${report.run.length} of ${report.drawn.length} faults run; ${report.violations.length} invariant violations`,
    `load: ${report.workload.created} pods created, ${report.workload.deleted} deleted, ${report.workload.refused} requests the API did not answer`,
    `checks: ${report.checks.passes} passes over the Ready pods, ${report.checks.connections} real connections answered, ${report.checks.audits} meshcni audits compared with them; ${report.checks.repairs} repair Events on its pods`,
    `the agent's API requests, the most in one minute: ${report.agentRequestsPerMinuteMax}`,
    "",
    `${"fault".padEnd(26)}${"runs".padStart(6)}${"recovery p50 s".padStart(16)}${"p99 s".padStart(8)}${"max s".padStart(8)}`,
  ];
  for (const kind of faultKinds) {
    const summary = report.recoveries.find((recovery) => recovery.kind === kind);
    const runs = report.run.filter((fault) => fault.kind === kind).length;
    if (runs === 0) continue;
    const cell = (value: number | undefined, width: number) => (value === undefined ? "-" : value.toFixed(1)).padStart(width);
    lines.push(`${kind.padEnd(26)}${String(runs).padStart(6)}${cell(summary?.p50, 16)}${cell(summary?.p99, 8)}${cell(summary?.max, 8)}`);
  }
  lines.push("", "the agent after each fault's recovery (fault: pid, RSS MB, open fds):");
  lines.push(report.agent.map((sample) => `${sample.index}: ${sample.pid} ${sample.rssMb} ${sample.fds}`).join("; "));
  for (const violation of report.violations) {
    lines.push(
      `VIOLATION at fault ${violation.index} (${violation.kind}), replay with ${replayCommand(report.draw, Math.min(report.drawn.length, Math.max(1, violation.index + 1)))}: ${violation.what}`,
    );
  }
  return lines.join("\n");
}
