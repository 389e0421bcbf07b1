import { parseSweepReport, type SweepInput, type SweepReport } from "../../audit/contract.js";
import { errorMessage } from "../../errors.js";
import { runBounded } from "../../spawn.js";

/** A whole sweep, at most: a hung runtime (15 s of its time: audit/host.ts) or netns must not stall every later one. */
export const sweepDeadlineMs = 60_000;

/** The most of a report read: a node's pods' verdicts come to kilobytes, never near it. */
const reportMaxBytes = 64 << 20;

/**
 * Runs `meshcni sweep` with the request and the agent's credentials on stdin; its report,
 * checked, or what went wrong. Past `deadlineMs` it is killed: that sweep is a problem,
 * the next one runs. `cancel` kills it too (the agent stopping: no sweep writes after it).
 */
export async function runSweepChild(
  binary: string,
  input: SweepInput,
  deadlineMs = sweepDeadlineMs,
  cancel?: AbortSignal,
): Promise<{ report: SweepReport } | { problem: string; exitCode?: number }> {
  const ran = await runBounded(binary, ["sweep"], {
    input: JSON.stringify(input),
    timeoutMs: deadlineMs,
    maxBytes: reportMaxBytes,
    ...(cancel ? { signal: cancel } : {}),
  });
  if (ran.failure === "cancelled") return { problem: "the sweep was stopped with the agent: killed" };
  if (ran.failure === "timedOut") return { problem: `the sweep did not finish within ${deadlineMs / 1000} s: killed` };
  if (ran.failure === "tooLarge") return { problem: `the sweep's report passed ${reportMaxBytes >> 20} MiB: killed` };
  if (ran.failure === "notFound") return { problem: `the sweep could not run: no ${binary}` };
  if (ran.failure !== undefined) return { problem: `the sweep could not run: ${errorMessage(ran.failure)}` };
  if (ran.exitCode !== 0 && ran.exitCode !== 1) {
    return { problem: `the sweep failed: ${ran.stderr.trim().split("\n").at(-1)}`, exitCode: ran.exitCode ?? -1 };
  }
  try {
    return { report: parseSweepReport(ran.stdout) };
  } catch (error) {
    return { problem: errorMessage(error) };
  }
}
