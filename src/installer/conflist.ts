/**
 * What the runtime reads in the CNI config dir, and how meshcni's entry goes in and out
 * of it. Pure: files in as text, files out as text.
 */

import { errorMessage } from "../errors.js";

/** Plugin types that are this agent's entry (an existing linkerd-cni entry is replaced). */
export const ownTypes = new Set(["meshcni", "linkerd-cni"]);

export type JsonObject = Record<string, unknown>;

export interface ConfigFile {
  name: string;
  text: string;
}

export type ParsedConfig = { valid: true; kind: "conf" | "conflist"; json: JsonObject } | { valid: false; reason: string };

export function isConfigName(name: string): boolean {
  return name.endsWith(".conf") || name.endsWith(".conflist") || name.endsWith(".json");
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Reads a config the way libcni does: a .conflist needs plugins with types, a .conf a type. */
export function parseConfig(file: ConfigFile): ParsedConfig {
  let json: unknown;
  try {
    json = JSON.parse(file.text);
  } catch (error) {
    return { valid: false, reason: `not valid JSON (${errorMessage(error)})` };
  }
  if (!isObject(json)) return { valid: false, reason: "not a JSON object" };
  if (file.name.endsWith(".conflist")) {
    const plugins = json.plugins;
    if (!Array.isArray(plugins) || plugins.length === 0) return { valid: false, reason: "a .conflist needs a non-empty plugins list" };
    if (!plugins.every((plugin) => isObject(plugin) && typeof plugin.type === "string" && plugin.type !== "")) {
      return { valid: false, reason: "every plugin needs a type" };
    }
    return { valid: true, kind: "conflist", json };
  }
  if (typeof json.type !== "string" || json.type === "") return { valid: false, reason: "a .conf needs a type" };
  return { valid: true, kind: "conf", json };
}

/** The runtime's choice: the lexicographically first config file that loads. */
export function activeConfig(files: ConfigFile[]): { file: ConfigFile; config: ParsedConfig & { valid: true } } | undefined {
  for (const file of [...files].filter((f) => isConfigName(f.name)).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const config = parseConfig(file);
    if (config.valid) return { file, config };
  }
  return undefined;
}

export function isOwnEntry(plugin: unknown): boolean {
  return isObject(plugin) && typeof plugin.type === "string" && ownTypes.has(plugin.type);
}

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
    const plugins = (config.json.plugins as unknown[]).filter((plugin) => !isOwnEntry(plugin));
    return { name: file.name, text: render({ ...config.json, plugins: [...plugins, entry] }) };
  }
  const wrapped = { cniVersion: config.json.cniVersion, name: config.json.name, plugins: [config.json, entry] };
  return { name: `${file.name.replace(/\.(conf|json)$/, "")}.conflist`, text: render(wrapped), replaces: file.name };
}

/** True when the config already holds our entry as withEntry would leave it. */
export function hasEntry(config: ParsedConfig, entry: JsonObject): boolean {
  if (!config.valid || config.kind !== "conflist") return false;
  const plugins = config.json.plugins as unknown[];
  const own = plugins.filter(isOwnEntry);
  return own.length === 1 && plugins.at(-1) === own[0] && JSON.stringify(own[0]) === JSON.stringify(entry);
}

/** The config with every own entry removed, or undefined when it holds none. */
export function withoutEntry(config: ParsedConfig): string | undefined {
  if (!config.valid || config.kind !== "conflist") return undefined;
  const plugins = config.json.plugins as unknown[];
  const others = plugins.filter((plugin) => !isOwnEntry(plugin));
  return others.length === plugins.length ? undefined : render({ ...config.json, plugins: others });
}

/** How many own entries a config holds (more than one is a duplicate). */
export function entryCount(config: ParsedConfig): number {
  return config.valid && config.kind === "conflist" ? (config.json.plugins as unknown[]).filter(isOwnEntry).length : 0;
}
