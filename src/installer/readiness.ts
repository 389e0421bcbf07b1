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
  /** The first reason as a word for machines (a Node condition's reason), e.g. NotChained; undefined when ready. */
  cause: string | undefined;
  /** The active config file's name, when there is one. */
  active: string | undefined;
}

/**
 * Whether the binary, the kubeconfig and the entry in the active config are all in
 * place, and if not, why. Reads the disk only, so `meshcni ready` and the agent agree.
 */
export function checkInstalled(options: InstallOptions, template: Template): Readiness {
  const paths = installPaths(options);
  if (!template.ok) return { ready: false, reasons: [template.reason], cause: "InvalidTemplate", active: undefined };
  const problems: Array<[cause: string, reason: string]> = [];
  const binary = join(paths.binDir, template.binaryName);
  if (!existsSync(binary) || (statSync(binary).mode & 0o111) === 0) problems.push(["BinaryMissing", `no executable ${binary}`]);
  if (!existsSync(paths.kubeconfig)) problems.push(["NoKubeconfig", `no kubeconfig ${paths.kubeconfig}`]);
  let active: string | undefined;
  try {
    const found = activeConfig(readConfigFiles(paths.netDir));
    active = found?.file.name;
    if (!found) problems.push(["NoPrimaryConfig", `no CNI config in ${paths.netDir} (waiting for the primary CNI)`]);
    else if (!found.config.valid)
      problems.push(["ActiveConfigInvalid", brokenConfigReason(join(paths.netDir, found.file.name), found.config.reason)]);
    else if (!hasEntry(found.config, template.entry))
      problems.push(["NotChained", `${join(paths.netDir, found.file.name)} does not end with meshcni's entry`]);
  } catch (error) {
    problems.push(["ConfigDirUnreadable", `cannot read ${paths.netDir}: ${errorMessage(error)}`]);
  }
  return { ready: problems.length === 0, reasons: problems.map(([, reason]) => reason), cause: problems[0]?.[0], active };
}

/** Readiness with one more problem (none: as it is); its cause leads only when it is the first. */
export function withProblem(readiness: Readiness, cause: string, reason: string | undefined): Readiness {
  if (reason === undefined) return readiness;
  return { ...readiness, ready: false, reasons: [...readiness.reasons, reason], cause: readiness.cause ?? cause };
}
