import { closeSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { stdinFile } from "../test/kit/stdin-file.js";

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
  // Its input whole before it starts, as a runtime hands a plugin its stdin (test/kit/stdin-file.ts says why).
  const input = options.input === undefined ? undefined : stdinFile(options.input);
  const started = performance.now();
  const running = execa("/usr/bin/time", ["-f", "%M", "-o", rssFile, command, ...args], {
    ...(options.env ? { env: options.env, extendEnv: false } : {}),
    ...(input ? { stdin: input.stdin } : {}),
    reject: false,
  });
  if (input) closeSync(input.fd);
  const result = await running;
  const ms = performance.now() - started;
  const rssKb = Number(readFileSync(rssFile, "utf8").trim().split("\n").at(-1));
  rmSync(rssFile, { force: true });
  return { ms, rssKb, exitCode: result.exitCode ?? -1, stdout: String(result.stdout), stderr: String(result.stderr) };
}

export function cleanupMeasure(): void {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
  scratch = undefined;
}
