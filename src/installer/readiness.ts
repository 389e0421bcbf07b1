import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { activeConfig, brokenConfigReason, readConfigFiles } from "../cni/config-dir.js";
import { errorMessage } from "../errors.js";
import { hasEntry } from "./conflist.js";
import { type InstallOptions, installPaths } from "./options.js";
import type { Template } from "./template.js";

export interface Readiness {
  ready: boolean;
  reasons: string[];
  /** The active config file's name, when there is one. */
  active: string | undefined;
}

/**
 * Whether the binary, the kubeconfig and the entry in the active config are all in
 * place, and if not, why. Reads the disk only, so `meshcni ready` and the agent agree.
 */
export function checkInstalled(options: InstallOptions, template: Template): Readiness {
  const paths = installPaths(options);
  const reasons: string[] = [];
  if (!template.ok) return { ready: false, reasons: [template.reason], active: undefined };
  const binary = join(paths.binDir, template.binaryName);
  if (!existsSync(binary) || (statSync(binary).mode & 0o111) === 0) reasons.push(`no executable ${binary}`);
  if (!existsSync(paths.kubeconfig)) reasons.push(`no kubeconfig ${paths.kubeconfig}`);
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
