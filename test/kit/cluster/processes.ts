import { spawn } from "node:child_process";
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sleep } from "../common.js";
import { paths } from "./layout.js";

/** A daemon of the cluster: how it is started again after a stop or a kill. */
export interface DaemonSpec {
  name: string;
  command: string;
  args: string[];
  env?: Record<string, string>;
}

const pidFile = (name: string) => join(paths.run, `${name}.pid`);

/** The pid recorded for a daemon, if its process still runs (and is no zombie). */
export function runningPid(name: string): number | undefined {
  if (!existsSync(pidFile(name))) return undefined;
  const pid = Number(readFileSync(pidFile(name), "utf8"));
  return alive(pid) ? pid : undefined;
}

function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !/^\d+ \(.*\) [ZX]/.test(stat);
  } catch {
    return false;
  }
}

/**
 * Starts a daemon detached from the caller (its own session, its output appended to
 * logs/<name>.log), so a cluster brought up by hand outlives the command that started it;
 * its pid goes to run/<name>.pid, which is how stop() and a later teardown find it.
 */
export function startDaemon(spec: DaemonSpec): number {
  mkdirSync(paths.run, { recursive: true });
  mkdirSync(paths.logs, { recursive: true });
  if (runningPid(spec.name)) throw new Error(`${spec.name} is already running`);
  const log = openSync(join(paths.logs, `${spec.name}.log`), "a");
  const child = spawn(spec.command, spec.args, {
    detached: true,
    stdio: ["ignore", log, log],
    env: { ...process.env, ...spec.env },
  });
  closeSync(log);
  child.unref();
  if (!child.pid) throw new Error(`cannot start ${spec.command}`);
  writeFileSync(pidFile(spec.name), String(child.pid));
  writeFileSync(join(paths.run, `${spec.name}.json`), JSON.stringify(spec));
  return child.pid;
}

/** The spec a daemon was last started with (to start it again as it was). */
export function daemonSpec(name: string): DaemonSpec {
  return JSON.parse(readFileSync(join(paths.run, `${name}.json`), "utf8")) as DaemonSpec;
}

/**
 * Stops a daemon: `signal` (SIGTERM: a clean stop; SIGKILL: a crash), then waits for its
 * exit, killing it after `graceMs`. A daemon not running is fine.
 */
export async function stopDaemon(name: string, signal: NodeJS.Signals = "SIGTERM", graceMs = 15_000): Promise<void> {
  const pid = runningPid(name);
  if (pid) {
    process.kill(pid, signal);
    const started = performance.now();
    while (alive(pid)) {
      if (performance.now() - started > graceMs) process.kill(pid, "SIGKILL");
      await sleep(50);
    }
  }
  rmSync(pidFile(name), { force: true });
}

/** Every daemon with a pidfile: what a teardown must stop, whoever started it. */
export function recordedDaemons(): string[] {
  if (!existsSync(paths.run)) return [];
  return readdirSync(paths.run)
    .filter((file) => file.endsWith(".pid"))
    .map((file) => file.slice(0, -".pid".length));
}

/** The last `lines` lines a daemon logged, for failure messages. */
export function daemonLog(name: string, lines = 30): string {
  const file = join(paths.logs, `${name}.log`);
  return existsSync(file) ? readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n") : "";
}
