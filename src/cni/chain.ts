/**
 * Whether the runtime can run a config's whole chain, beyond parsing it: libcni's rules for
 * a list (a name, a version it speaks) and an executable in the CNI bin dir for every
 * plugin and IPAM type. A runtime finds a missing one only at a pod's ADD ("failed to find
 * plugin"), and then fails every ADD and DEL on the node. Pure.
 */

import { isJsonObject } from "../json.js";
import type { ParsedConfig } from "./config-dir.js";
import { compareVersions, latestVersion } from "./version.js";

export interface ChainHealth {
  /** The types the chain runs with no executable of that name in the bin dir, in chain order. */
  missing: string[];
  /** Why the runtime refuses the list itself (libcni's parse), when it does. */
  invalid: string[];
}

/**
 * What is wrong with the chain of `file`, a line each: the types with no executable in
 * `dirs` (one line naming them all), then why libcni refuses the list. None: it can run.
 */
export function chainProblems(file: string, chain: ChainHealth, dirs: string): string[] {
  const missing =
    chain.missing.length > 0
      ? [
          `${file} chains ${chain.missing.join(", ")}, with no executable in ${dirs}: the runtime fails every pod's ADD and DEL on this node`,
        ]
      : [];
  return [...missing, ...chain.invalid.map((why) => `${file}: ${why}`)];
}

/** Every type the runtime executes for the config: each plugin's, then its IPAM's, in chain order, once each. */
export function chainTypes(config: ParsedConfig & { valid: true }): string[] {
  const plugins = config.kind === "conflist" ? (config.json.plugins as unknown[]) : [config.json];
  const types = plugins.flatMap((plugin) => {
    if (!isJsonObject(plugin)) return [];
    const ipam = isJsonObject(plugin.ipam) && typeof plugin.ipam.type === "string" ? [plugin.ipam.type] : [];
    return [plugin.type as string, ...ipam];
  });
  return [...new Set(types)].filter((type) => type !== "");
}

/**
 * The config's chain against the executables the bin dir holds. `skip` are types checked
 * elsewhere (meshcni's own binary, which readiness names on its own).
 */
export function checkChain(
  config: ParsedConfig & { valid: true },
  executables: ReadonlySet<string>,
  skip: ReadonlySet<string>,
): ChainHealth {
  const missing = chainTypes(config).filter((type) => !skip.has(type) && !executables.has(type));
  const invalid: string[] = [];
  const { json } = config;
  // libcni (NetworkConfFromBytes) refuses a list without a name: containerd's whole CNI load fails, CRI-O skips the file.
  if (config.kind === "conflist" && typeof json.name !== "string") invalid.push(`it has no "name" (libcni refuses a list without one)`);
  const version = json.cniVersion;
  if (version !== undefined) {
    if (typeof version !== "string" || !/^\d+\.\d+\.\d+$/.test(version))
      invalid.push(`its cniVersion ${JSON.stringify(version)} is not a version`);
    else if (compareVersions(version, latestVersion) > 0)
      invalid.push(`its cniVersion ${version} is newer than any runtime's libcni speaks (${latestVersion})`);
  }
  return { missing, invalid };
}
