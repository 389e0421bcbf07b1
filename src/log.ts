import { appendFileSync } from "node:fs";

const levels = { debug: 10, info: 20, warn: 30, warning: 30, error: 40 } as const;
export type LogLevel = keyof typeof levels;

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/**
 * Logs one line per event to stderr (never stdout: that is the runtime's) and, when
 * set, appends it to a file; a file that cannot be written never fails the verb.
 */
export function createLogger(options: { level?: LogLevel; file?: string; prefix?: Record<string, unknown> } = {}): Logger {
  const threshold = levels[options.level ?? "info"];
  const write = (level: Exclude<LogLevel, "warning">, message: string, fields?: Record<string, unknown>) => {
    if (levels[level] < threshold) return;
    const line = `${JSON.stringify({ time: new Date().toISOString(), level, msg: message, ...options.prefix, ...fields })}\n`;
    process.stderr.write(line);
    if (options.file) {
      try {
        appendFileSync(options.file, line);
      } catch {
        // A missing log directory must not turn into a failed pod start.
      }
    }
  };
  return {
    debug: (message, fields) => write("debug", message, fields),
    info: (message, fields) => write("info", message, fields),
    warn: (message, fields) => write("warn", message, fields),
    error: (message, fields) => write("error", message, fields),
  };
}
