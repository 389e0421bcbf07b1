import { existsSync, readFileSync, statSync } from "node:fs";
import { writeAtomic } from "../files.js";

/**
 * Puts the agent's own binary into the CNI bin dir (temp file + rename, so the runtime
 * never execs half a binary); an identical one is left alone. Returns what it did.
 */
export function installBinary(source: string, target: string): { installed: boolean; bytes: number } {
  const content = readFileSync(source);
  if (existsSync(target) && statSync(target).size === content.length && readFileSync(target).equals(content)) {
    return { installed: false, bytes: content.length };
  }
  writeAtomic(target, content, 0o755);
  return { installed: true, bytes: content.length };
}
