import { existsSync, readdirSync, rmdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { parseConfig, readConfigFiles } from "../cni/config-dir.js";
import { errnoCode } from "../errors.js";
import { removeFile, writeAtomic } from "../files.js";
import { hostPaths } from "../host.js";
import { formatPodKey } from "../pod-key.js";
import { fileRecordStore } from "../state/records.js";
import { withoutEntry } from "./conflist.js";
import type { InstallPaths } from "./options.js";

/** Writes every config that holds meshcni's entry (of its template's `type`) without it (atomically); returns their names. */
export function removeEntries(netDir: string, type: string): string[] {
  const changed: string[] = [];
  for (const file of readConfigFiles(netDir)) {
    const text = withoutEntry(parseConfig(file), type);
    if (text === undefined) continue;
    writeAtomic(join(netDir, file.name), text, file.mode);
    changed.push(file.name);
  }
  return changed;
}

/**
 * The pods whose netns still exist among the state dir's records (NAMESPACE/NAME): they
 * keep their redirect, written into their netns, until they end. Their netns paths are
 * the host's, looked at under hostRoot.
 */
export function runningRecordedPods(stateDir: string, hostRoot: string): string[] {
  const onHost = hostPaths(hostRoot);
  const pods = fileRecordStore(stateDir)
    .list()
    .filter((record) => record.netns !== "" && existsSync(onHost(record.netns)))
    .map((record) => formatPodKey(record.pod));
  return [...new Set(pods)].sort();
}

/**
 * Removes what was installed besides the config entries: the kubeconfig, the binary, the
 * agent's socket (wherever --agent-socket put it) and the state dir (records, locks).
 */
export function removeInstalledFiles(
  paths: Pick<InstallPaths, "kubeconfig" | "binDir" | "stateDir" | "agentSocket">,
  binaryName: string | undefined,
): void {
  removeFile(paths.kubeconfig);
  if (binaryName) removeFile(join(paths.binDir, binaryName));
  if (paths.agentSocket) removeFile(paths.agentSocket);
  removeTree(paths.stateDir);
}

/**
 * Removes a dir and all it holds; a dir that is a mount point (the agent's hostPath volume)
 * stays, empty: its rmdir fails with EBUSY, or EROFS under the container's read-only root.
 */
function removeTree(dir: string): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return;
    throw error;
  }
  for (const name of names) rmSync(join(dir, name), { recursive: true, force: true });
  try {
    rmdirSync(dir);
  } catch (error) {
    if (errnoCode(error) !== "EBUSY" && errnoCode(error) !== "EROFS") throw error;
  }
}
