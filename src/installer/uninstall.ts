import { rmSync } from "node:fs";
import { join } from "node:path";
import { parseConfig, readConfigFiles } from "../cni/config-dir.js";
import { removeFile, writeAtomic } from "../files.js";
import { withoutEntry } from "./conflist.js";
import type { InstallPaths } from "./options.js";

/** Writes every config that holds meshcni's entry without it (atomically); returns their names. */
export function removeEntries(netDir: string): string[] {
  const changed: string[] = [];
  for (const file of readConfigFiles(netDir)) {
    const text = withoutEntry(parseConfig(file));
    if (text === undefined) continue;
    writeAtomic(join(netDir, file.name), text);
    changed.push(file.name);
  }
  return changed;
}

/** Removes what was installed besides the config entries: the kubeconfig, the binary, the state dir. */
export function removeInstalledFiles(
  paths: Pick<InstallPaths, "kubeconfig" | "binDir" | "stateDir">,
  binaryName: string | undefined,
): void {
  removeFile(paths.kubeconfig);
  if (binaryName) removeFile(join(paths.binDir, binaryName));
  rmSync(paths.stateDir, { recursive: true, force: true });
}
