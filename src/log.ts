import { closeSync, constants, fstatSync, renameSync, writeSync } from "node:fs";
import { errnoCode, errorMessage } from "./errors.js";
import { FileKindError, fileKind, openNonBlocking } from "./file-open.js";

const levels = { debug: 10, info: 20, warn: 30, warning: 30, error: 40 } as const;
export type LogLevel = keyof typeof levels;
/** Every level a logger takes, the plugin's netconf's "warning" (Linkerd's) included. */
export const logLevels = Object.keys(levels) as LogLevel[];

/** The levels the agent and the CLI accept (the plugin's log_level also takes Linkerd's "warning"). */
export const agentLogLevels = ["debug", "info", "warn", "error"] as const;
export type AgentLogLevel = (typeof agentLogLevels)[number];

/** A log_file past this size is renamed to `<log_file>.1` (replacing the last one) and started afresh. */
export const logFileMaxBytes = 10 << 20;

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/**
 * Opens the log file for appending: never through a symlink (O_NOFOLLOW: on a host with
 * protected_symlinks=0 a planted link would have meshcni write into any file), never
 * blocking (a fifo is refused), and rotated once it is past logFileMaxBytes.
 */
function openLogFile(path: string): number {
  const open = () => openNonBlocking(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
  let fd = open();
  const stat = fstatSync(fd);
  if (!stat.isFile()) {
    closeSync(fd);
    throw new FileKindError(path, fileKind(stat));
  }
  if (stat.size >= logFileMaxBytes) {
    closeSync(fd);
    renameSync(path, `${path}.1`);
    fd = open();
  }
  return fd;
}

/** Log files this process could not write, said once each (the agent makes a logger per ADD or DEL it carries out). */
const unwritableFiles = new Set<string>();

/**
 * Logs one JSON line per event to stderr (never stdout: that is the runtime's) and, when
 * set, appends it to a file. A file that cannot be written never fails the verb: the
 * reason is logged once to stderr (once per process) and the file is left alone.
 */
export function createLogger(
  options: { level?: LogLevel; file?: string; prefix?: Record<string, unknown> } = {},
): Logger & { /** Closes the log file (a long-lived process's logger for one request). */ close(): void } {
  const threshold = levels[options.level ?? "info"];
  let fd: number | undefined;
  let fileFailed = false;
  const line = (level: string, message: string, fields?: Record<string, unknown>) =>
    `${JSON.stringify({ time: new Date().toISOString(), level, msg: message, ...options.prefix, ...fields })}\n`;
  const toFile = (text: string) => {
    if (!options.file || fileFailed) return;
    try {
      fd ??= openLogFile(options.file);
      writeSync(fd, text);
    } catch (error) {
      fileFailed = true;
      if (unwritableFiles.has(options.file)) return;
      unwritableFiles.add(options.file);
      const reason = errnoCode(error) === "ELOOP" ? "it is a symlink, which meshcni does not follow" : errorMessage(error);
      process.stderr.write(line("warn", "not writing the log file", { file: options.file, reason }));
    }
  };
  const write = (level: Exclude<LogLevel, "warning">, message: string, fields?: Record<string, unknown>) => {
    if (levels[level] < threshold) return;
    const text = line(level, message, fields);
    // Synchronous, as the plugin exits right after its answer; an EAGAIN on a full non-blocking pipe is not a reason to fail.
    try {
      writeSync(2, text);
    } catch {
      process.stderr.write(text);
    }
    toFile(text);
  };
  return {
    debug: (message, fields) => write("debug", message, fields),
    info: (message, fields) => write("info", message, fields),
    warn: (message, fields) => write("warn", message, fields),
    error: (message, fields) => write("error", message, fields),
    close() {
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
    },
  };
}

/**
 * The plugin's logger in the agent, for one ADD or DEL it carries out: the netconf's level,
 * and its log_file as the agent's container sees it (`onHost`); one it cannot write (not
 * mounted there) is said once and its lines go to the agent's log. Opened and closed per
 * request (close it), so the plugin processes' rotation of the file holds.
 */
export function pluginLogger(level: LogLevel, file: string | undefined, onHost: (path: string) => string, prefix: Record<string, unknown>) {
  return createLogger({ level, ...(file ? { file: onHost(file) } : {}), prefix });
}

/**
 * Reasons said once each, and at most `limit` of them (past that, none): a caller that
 * retries, or a reason at every pod start, must neither flood the log nor grow memory.
 */
export class SaidOnce {
  private readonly said = new Set<string>();

  constructor(private readonly limit = 100) {}

  /** Whether `reason` is to be said now: the first time, while under the limit. */
  first(reason: string): boolean {
    if (this.said.has(reason) || this.said.size >= this.limit) return false;
    this.said.add(reason);
    return true;
  }
}

/**
 * Problems that persist across resyncs and sweeps (a broken config, an unreachable API):
 * each is logged when it appears or changes, and once when it clears, never at every
 * retry.
 */
export class StandingProblems {
  private readonly problems = new Map<string, string>();

  constructor(private readonly log: Logger) {}

  /** Sets a topic's problem (undefined: it cleared); the fields are logged with it. */
  set(topic: string, problem: string | undefined, options: { level?: "warn" | "error"; fields?: Record<string, unknown> } = {}): void {
    const previous = this.problems.get(topic);
    if (previous === problem) return;
    if (problem === undefined) {
      this.problems.delete(topic);
      this.log.info("resolved", { topic, was: previous });
      return;
    }
    this.problems.set(topic, problem);
    this.log[options.level ?? "warn"](problem, options.fields);
  }
}
