import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { chainProblems, checkChain } from "../cni/chain.js";
import { activeConfig, brokenConfigReason, type ConfigFile, type ParsedConfig, readConfigFiles } from "../cni/config-dir.js";
import { dropInName, dropInNetwork, readDropIns } from "../cni/drop-ins.js";
import { errorMessage } from "../errors.js";
import type { JsonObject } from "../json.js";
import { pluginExecutables } from "./bin-dir.js";
import { hasEntry } from "./conflist.js";
import { type ChainMode, dropInText } from "./dropin.js";
import { type InstallOptions, installPaths } from "./options.js";
import type { Template } from "./template.js";

export interface Readiness {
  ready: boolean;
  reasons: string[];
  /** The first reason as a word for machines (a Node condition's reason), e.g. NotChained; undefined when ready. */
  cause: string | undefined;
  /** The active config file's name, when there is one. */
  active: string | undefined;
  /** How meshcni is in the runtime's chain, once it is: `in 10-calico.conflist`, `by its drop-in k8s-pod-network/zz-meshcni.conf`. */
  chainedBy?: string;
  /** Plugin types the active config chains with no executable in the bin dir (ChainBroken). */
  missingPlugins: string[];
}

/**
 * Whether the binary, the kubeconfig and the entry in the active config are all in
 * place, and the runtime can run the active config's whole chain (ChainBroken: a plugin's
 * binary missing, a list libcni refuses), and if not, why. Reads the disk only.
 */
export function checkInstalled(options: InstallOptions, template: Template, mode: ChainMode = { kind: "asking" }): Readiness {
  const paths = installPaths(options);
  if (!template.ok) return { ready: false, reasons: [template.reason], cause: "InvalidTemplate", active: undefined, missingPlugins: [] };
  const problems: Array<[cause: string, reason: string]> = [];
  const binary = join(paths.binDir, template.binaryName);
  if (!existsSync(binary) || (statSync(binary).mode & 0o111) === 0) problems.push(["BinaryMissing", `no executable ${binary}`]);
  if (!existsSync(paths.kubeconfig)) problems.push(["NoKubeconfig", `no kubeconfig ${paths.kubeconfig}`]);
  let active: string | undefined;
  let chainedBy: string | undefined;
  let missingPlugins: string[] = [];
  try {
    const found = activeConfig(readConfigFiles(paths.netDir));
    active = found?.file.name;
    if (!found) problems.push(["NoPrimaryConfig", `no CNI config in ${paths.netDir} (waiting for the primary CNI)`]);
    else if (!found.config.valid)
      problems.push(["ActiveConfigInvalid", brokenConfigReason(join(paths.netDir, found.file.name), found.config.reason)]);
    else {
      const file = join(paths.netDir, found.file.name);
      const chained = chainState(paths.netDir, found.file, found.config, template.entry, mode);
      if ("problem" in chained) problems.push(["NotChained", chained.problem]);
      else chainedBy = chained.by;
      const chain = checkChain(found.config, pluginExecutables(paths.pluginDirs, options.hostRoot), new Set([template.binaryName]));
      missingPlugins = chain.missing;
      for (const problem of chainProblems(file, chain, paths.pluginDirs.join(" or "))) problems.push(["ChainBroken", problem]);
    }
  } catch (error) {
    problems.push(["ConfigDirUnreadable", `cannot read ${paths.netDir}: ${errorMessage(error)}`]);
  }
  const reasons = problems.map(([, reason]) => reason);
  return { ready: problems.length === 0, reasons, cause: problems[0]?.[0], active, missingPlugins, ...(chainedBy ? { chainedBy } : {}) };
}

/**
 * Whether meshcni is in the active config's chain, by the mode: its entry last in the
 * config; its drop-in once the runtime said it loaded it; either, from the disk alone, before
 * the runtime was asked (`meshcni ready`, an agent starting). The probe chains nothing.
 */
function chainState(
  netDir: string,
  file: ConfigFile,
  config: ParsedConfig & { valid: true },
  entry: JsonObject,
  mode: ChainMode,
): { by: string } | { problem: string } {
  const inConfig = { by: `in ${file.name}` };
  const path = join(netDir, file.name);
  if (mode.kind === "conflist") return hasEntry(config, entry) ? inConfig : { problem: `${path} does not end with meshcni's entry` };
  const target = dropInNetwork(file, config);
  const dropIn = "network" in target ? join(target.network, dropInName) : undefined;
  const dropInHeld = () =>
    "network" in target && readDropIns(netDir).some(({ network, text }) => network === target.network && text === dropInText(entry, false));
  // The probe chains nothing: the config's entry, if any, still does the work meanwhile.
  if (mode.kind === "probe")
    return hasEntry(config, entry)
      ? inConfig
      : { problem: `proving that the container runtime loads drop-ins: meshcni's probe is in ${join(netDir, dropIn ?? "")}` };
  if (mode.kind === "dropin") {
    if (!dropInHeld()) return { problem: `${join(netDir, dropIn ?? "")} does not hold meshcni's entry` };
    return mode.proven
      ? { by: `by its drop-in ${dropIn}` }
      : { problem: `waiting for the container runtime to say it loaded ${join(netDir, dropIn ?? "")}` };
  }
  if (hasEntry(config, entry)) return inConfig;
  return dropInHeld()
    ? { by: `by its drop-in ${dropIn}` }
    : { problem: `neither does ${path} end with meshcni's entry nor does its drop-in dir hold it` };
}

/** Readiness with one more problem (none: as it is); its cause leads only when it is the first. */
export function withProblem(readiness: Readiness, cause: string, reason: string | undefined): Readiness {
  if (reason === undefined) return readiness;
  return { ...readiness, ready: false, reasons: [...readiness.reasons, reason], cause: readiness.cause ?? cause };
}
