import { spawn } from "node:child_process";
import { errnoCode } from "./errors.js";

/** How a process ended: its exit code (undefined when a signal or spawn error ended it), what it wrote, and why it was cut short. */
export interface Ran {
  exitCode: number | undefined;
  stdout: string;
  stderr: string;
  /** ENOENT, past its time, stdout past its bound, cancelled, or another spawn error; undefined when it ran its course. */
  failure: "notFound" | "timedOut" | "tooLarge" | "cancelled" | Error | undefined;
}

/**
 * Runs a binary with an argument array (never a shell), `input` on stdin, killed (SIGKILL)
 * after `timeoutMs`, when its stdout passes `maxBytes`, or when `signal` aborts. Through
 * node:child_process, which Node and Bun both run: execa is most of a plugin process's
 * memory (bench/README.md), and the pod-start path pays it per pod.
 */
export function runBounded(
  binary: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; input?: string; timeoutMs: number; maxBytes: number; signal?: AbortSignal },
): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn(binary, args, { env: options.env ?? process.env, stdio: ["pipe", "pipe", "pipe"] });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let failure: Ran["failure"];
    const kill = (why: NonNullable<Ran["failure"]>) => {
      failure ??= why;
      child.kill("SIGKILL");
    };
    const timer = setTimeout(() => kill("timedOut"), options.timeoutMs);
    const cancel = () => kill("cancelled");
    if (options.signal?.aborted) cancel();
    options.signal?.addEventListener("abort", cancel, { once: true });
    let bytes = 0;
    child.stdout.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes <= options.maxBytes) return void stdout.push(chunk);
      kill("tooLarge");
    });
    child.stderr.on("data", (chunk: Buffer) => stderr.push(chunk));
    // A binary that exits before reading its input closes the pipe: its exit code says what happened.
    child.stdin.on("error", () => undefined);
    child.stdin.end(options.input ?? "");
    child.once("error", (error) => {
      failure ??= errnoCode(error) === "ENOENT" ? "notFound" : error;
    });
    child.once("close", (code) => {
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", cancel);
      resolve({ exitCode: code ?? undefined, stdout: Buffer.concat(stdout).toString(), stderr: Buffer.concat(stderr).toString(), failure });
    });
  });
}
