import { existsSync, statSync } from "node:fs";
import { copyAtomic, sameContent } from "../files.js";

/**
 * Puts the agent's own binary into the CNI bin dir (temp file + rename, so the runtime
 * never execs half a binary); an identical one is left alone. Compared and copied a chunk
 * at a time: the binary is over 100 MB, the agent's memory limit is not. Returns what it did.
 */
export function installBinary(source: string, target: string): { installed: boolean; bytes: number } {
  const bytes = statSync(source).size;
  if (existsSync(target) && sameContent(source, target)) return { installed: false, bytes };
  copyAtomic(source, target, 0o755);
  return { installed: true, bytes };
}
