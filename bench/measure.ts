import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";

export interface Measured {
  ms: number;
  /** Peak resident set of the process (and its waited-for children), from wait4. */
  rssKb: number;
  exitCode: number;
  stdout: string;
  stderr: string;
}

let scratch: string | undefined;
let counter = 0;

/** Runs a command under GNU time for its peak RSS; the wall time is measured around it. */
export async function measure(
  command: string,
  args: string[],
  options: { env?: Record<string, string>; input?: string } = {},
): Promise<Measured> {
  scratch ??= mkdtempSync(join(tmpdir(), "meshcni-bench-"));
  const rssFile = join(scratch, `rss-${counter++}`);
  const started = performance.now();
  const result = await execa("/usr/bin/time", ["-f", "%M", "-o", rssFile, command, ...args], {
    ...(options.env ? { env: options.env, extendEnv: false } : {}),
    ...(options.input !== undefined ? { input: options.input } : {}),
    reject: false,
  });
  const ms = performance.now() - started;
  const rssKb = Number(readFileSync(rssFile, "utf8").trim().split("\n").at(-1));
  rmSync(rssFile, { force: true });
  return { ms, rssKb, exitCode: result.exitCode ?? -1, stdout: String(result.stdout), stderr: String(result.stderr) };
}

export function cleanupMeasure(): void {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
  scratch = undefined;
}
