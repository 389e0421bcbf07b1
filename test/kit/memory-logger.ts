import type { Logger } from "../../src/log.js";

export interface LogEntry {
  level: string;
  message: string;
  fields: Record<string, unknown> | undefined;
}

/** A logger that keeps its lines in `logs`. */
export function memoryLogger(logs: LogEntry[]): Logger {
  const at = (level: string) => (message: string, fields?: Record<string, unknown>) => void logs.push({ level, message, fields });
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}
