/**
 * meshcni's drop-ins on disk: written, removed, and the runtime made to reload. Only
 * `<net dir>/<network>/zz-meshcni.conf` is ever touched, and the dir it made when it empties.
 */

import { mkdirSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { dropInName } from "../cni/drop-ins.js";
import { errnoCode } from "../errors.js";
import { removeFile, writeAtomic } from "../files.js";
import { reloadTriggerName } from "./dropin.js";

export function writeDropIn(netDir: string, network: string, text: string): void {
  mkdirSync(join(netDir, network), { recursive: true, mode: 0o755 });
  writeAtomic(join(netDir, network, dropInName), text, 0o644);
}

/** Removes meshcni's drop-in from a network's dir, and the dir once empty (another's file in it keeps it). */
export function removeDropIn(netDir: string, network: string): void {
  removeFile(join(netDir, network, dropInName));
  try {
    rmdirSync(join(netDir, network));
  } catch (error) {
    if (!["ENOENT", "ENOTEMPTY", "EEXIST"].includes(errnoCode(error) ?? "")) throw error;
  }
}

/** A file made and removed in the config dir: the removal makes the runtime reload the dir, its drop-ins with it. */
export function triggerReload(netDir: string): void {
  const path = join(netDir, reloadTriggerName);
  writeFileSync(path, "");
  removeFile(path);
}
