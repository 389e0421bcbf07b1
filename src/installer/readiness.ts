import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { chainProblems, checkChain } from "../cni/chain.js";
import { activeConfig, brokenConfigReason, readConfigFiles } from "../cni/config-dir.js";
import { errorMessage } from "../errors.js";
import { pluginExecutables } from "./bin-dir.js";
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
  /** Plugin types the active config chains with no executable in the bin dir (ChainBroken). */
  missingPlugins: string[];
}

/**
 * Whether the binary, the kubeconfig and the entry in the active config are all in
 * place, and the runtime can run the active config's whole chain (ChainBroken: a plugin's
 * binary missing, a list libcni refuses), and if not, why. Reads the disk only.
 */
export function checkInstalled(options: InstallOptions, template: Template): Readiness {
  const paths = installPaths(options);
  if (!template.ok) return { ready: false, reasons: [template.reason], cause: "InvalidTemplate", active: undefined, missingPlugins: [] };
  const problems: Array<[cause: string, reason: string]> = [];
  const binary = join(paths.binDir, template.binaryName);
  if (!existsSync(binary) || (statSync(binary).mode & 0o111) === 0) problems.push(["BinaryMissing", `no executable ${binary}`]);
  if (!existsSync(paths.kubeconfig)) problems.push(["NoKubeconfig", `no kubeconfig ${paths.kubeconfig}`]);
  let active: string | undefined;
  let missingPlugins: string[] = [];
  try {
    const found = activeConfig(readConfigFiles(paths.netDir));
    active = found?.file.name;
    if (!found) problems.push(["NoPrimaryConfig", `no CNI config in ${paths.netDir} (waiting for the primary CNI)`]);
    else if (!found.config.valid)
      problems.push(["ActiveConfigInvalid", brokenConfigReason(join(paths.netDir, found.file.name), found.config.reason)]);
    else {
      const file = join(paths.netDir, found.file.name);
      if (!hasEntry(found.config, template.entry)) problems.push(["NotChained", `${file} does not end with meshcni's entry`]);
      const chain = checkChain(found.config, pluginExecutables(paths.pluginDirs, options.hostRoot), new Set([template.binaryName]));
      missingPlugins = chain.missing;
      for (const problem of chainProblems(file, chain, paths.pluginDirs.join(" or "))) problems.push(["ChainBroken", problem]);
    }
  } catch (error) {
    problems.push(["ConfigDirUnreadable", `cannot read ${paths.netDir}: ${errorMessage(error)}`]);
  }
  return { ready: problems.length === 0, reasons: problems.map(([, reason]) => reason), cause: problems[0]?.[0], active, missingPlugins };
}

/** Readiness with one more problem (none: as it is); its cause leads only when it is the first. */
export function withProblem(readiness: Readiness, cause: string, reason: string | undefined): Readiness {
  if (reason === undefined) return readiness;
  return { ...readiness, ready: false, reasons: [...readiness.reasons, reason], cause: readiness.cause ?? cause };
}
