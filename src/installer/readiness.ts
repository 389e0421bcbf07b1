import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { activeConfig, brokenConfigReason, readConfigFiles } from "../cni/config-dir.js";
import { errorMessage } from "../errors.js";
import { hasEntry } from "./conflist.js";
import { serviceAccountToken } from "./kubeconfig.js";
import { type InstallerOptions, installerPaths } from "./options.js";
import type { Template } from "./template.js";

export interface Readiness {
  ready: boolean;
  reasons: string[];
  /** The active config file's name, when there is one. */
  active: string | undefined;
}

/**
 * Ready only while the binary, the kubeconfig and the entry in the active config are
 * all in place. Reads the disk only, so `meshcni ready` and the agent agree.
 */
export function checkReadiness(options: InstallerOptions, template: Template): Readiness {
  const paths = installerPaths(options);
  const reasons: string[] = [];
  if (!template.ok) return { ready: false, reasons: [template.reason], active: undefined };
  const binary = join(paths.binDir, template.binaryName);
  if (!existsSync(binary) || (statSync(binary).mode & 0o111) === 0) reasons.push(`no executable ${binary}`);
  if (!existsSync(paths.kubeconfig)) reasons.push(`no kubeconfig ${paths.kubeconfig}`);
  const token = serviceAccountToken(options.serviceAccountDir);
  if (!token.ok) reasons.push(token.problem);
  let active: string | undefined;
  try {
    const found = activeConfig(readConfigFiles(paths.netDir));
    active = found?.file.name;
    if (!found) reasons.push(`no CNI config in ${paths.netDir} (waiting for the primary CNI)`);
    else if (!found.config.valid) reasons.push(brokenConfigReason(join(paths.netDir, found.file.name), found.config.reason));
    else if (!hasEntry(found.config, template.entry))
      reasons.push(`${join(paths.netDir, found.file.name)} does not end with meshcni's entry`);
  } catch (error) {
    reasons.push(`cannot read ${paths.netDir}: ${errorMessage(error)}`);
  }
  return { ready: reasons.length === 0, reasons, active };
}

/**
 * Alive while reconciles keep running: one every resync at least, so none for three
 * resyncs (and 30 s) means the loop is stuck and a restart may help. Readiness problems
 * (a broken config, a missing token) are not liveness problems: a restart fixes none.
 */
export function checkLiveness(lastReconcileAt: number, now: number, resyncSeconds: number): { alive: boolean; reason: string } {
  const sinceMs = now - lastReconcileAt;
  const limitMs = Math.max(3 * resyncSeconds * 1000, 30_000);
  return sinceMs <= limitMs
    ? { alive: true, reason: "ok" }
    : { alive: false, reason: `no reconcile for ${Math.round(sinceMs / 1000)} s (limit ${limitMs / 1000} s)` };
}
