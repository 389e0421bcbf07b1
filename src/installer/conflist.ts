/**
 * How meshcni's entry goes in and out of the active CNI config. Pure: configs in, text out.
 */

import type { ConfigFile, ParsedConfig } from "../cni/config-dir.js";
import type { JsonObject } from "../json.js";
import { isEntryOfType } from "../mesh/netconf.js";

function render(json: JsonObject): string {
  return `${JSON.stringify(json, null, 2)}\n`;
}

export interface EntryWrite {
  /** The file to write: a .conf becomes a .conflist, as the runtime would read it. */
  name: string;
  text: string;
  /** A .conf that the .conflist replaces and that must go once it is written. */
  replaces?: string;
}

/**
 * The active config with meshcni's entry as its last plugin; any earlier own entry is
 * dropped, every other plugin and key stays as it was. A .conf is wrapped the way libcni
 * reads it (ConfListFromConf): name and cniVersion lifted, the whole conf as first plugin.
 */
export function withEntry(file: ConfigFile, config: ParsedConfig & { valid: true }, entry: JsonObject): EntryWrite {
  if (config.kind === "conflist") {
    const own = isEntryOfType(entry.type as string);
    const plugins = (config.json.plugins as unknown[]).filter((plugin) => !own(plugin));
    return { name: file.name, text: render({ ...config.json, plugins: [...plugins, entry] }) };
  }
  const wrapped = { cniVersion: config.json.cniVersion, name: config.json.name, plugins: [config.json, entry] };
  return { name: `${file.name.replace(/\.(conf|json)$/, "")}.conflist`, text: render(wrapped), replaces: file.name };
}

/** True when the config already holds our entry as withEntry would leave it. */
export function hasEntry(config: ParsedConfig, entry: JsonObject): boolean {
  if (!config.valid || config.kind !== "conflist") return false;
  const plugins = config.json.plugins as unknown[];
  const own = plugins.filter(isEntryOfType(entry.type as string));
  return own.length === 1 && plugins.at(-1) === own[0] && JSON.stringify(own[0]) === JSON.stringify(entry);
}

/** The config with every entry of meshcni's `type` removed, or undefined when it holds none. */
export function withoutEntry(config: ParsedConfig, type: string): string | undefined {
  if (!config.valid || config.kind !== "conflist") return undefined;
  const plugins = config.json.plugins as unknown[];
  const own = isEntryOfType(type);
  const others = plugins.filter((plugin) => !own(plugin));
  return others.length === plugins.length ? undefined : render({ ...config.json, plugins: others });
}

/** How many entries of meshcni's `type` a config holds (more than one is a duplicate). */
export function entryCount(config: ParsedConfig, type: string): number {
  return config.valid && config.kind === "conflist" ? (config.json.plugins as unknown[]).filter(isEntryOfType(type)).length : 0;
}
