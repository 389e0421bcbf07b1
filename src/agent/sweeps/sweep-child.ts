import { execa } from "execa";
import { parseSweepReport, type SweepInput, type SweepReport } from "../../audit/contract.js";
import { errorMessage } from "../../errors.js";

/** A whole sweep, at most: a hung runtime (15 s of its time: audit/host.ts) or netns must not stall every later one. */
export const sweepDeadlineMs = 60_000;

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
  const options = {
    reject: false,
    input: JSON.stringify(input),
    timeout: deadlineMs,
    killSignal: "SIGKILL",
    ...(cancel ? { cancelSignal: cancel } : {}),
  } as const;
  const result = await execa(binary, ["sweep"], options);
  if (result.isCanceled) return { problem: "the sweep was stopped with the agent: killed" };
  if (result.timedOut) return { problem: `the sweep did not finish within ${deadlineMs / 1000} s: killed` };
  if (result.exitCode !== 0 && result.exitCode !== 1) {
    return { problem: `the sweep failed: ${String(result.stderr).trim().split("\n").at(-1)}`, exitCode: result.exitCode ?? -1 };
  }
  try {
    return { report: parseSweepReport(String(result.stdout)) };
  } catch (error) {
    return { problem: errorMessage(error) };
  }
}
