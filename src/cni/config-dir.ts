/**
 * What the runtime reads in the CNI config dir: which files, which of them it loads, and
 * what makes one valid (libcni's rules). Pure but for readConfigFiles.
 */

import { readdirSync } from "node:fs";
import { join } from "node:path";
import { errnoCode, errorMessage } from "../errors.js";
import { FileKindError, FileTooLargeError, readRegular } from "../file-open.js";
import { isJsonObject, type JsonObject } from "../json.js";

export interface ConfigFile {
  name: string;
  text: string;
  /** When it was last written (ms since the epoch), when read from a dir. */
  modifiedMs?: number;
  /** Its permission bits, when read from a dir: a rewrite keeps them. */
  mode?: number;
}

export type ParsedConfig = { valid: true; kind: "conf" | "conflist"; json: JsonObject } | { valid: false; reason: string };

export function isConfigName(name: string): boolean {
  return name.endsWith(".conf") || name.endsWith(".conflist") || name.endsWith(".json");
}

/**
 * A config set aside under another suffix (Cilium's cni.exclusive renames others to
 * `*.cilium_bak`; operators to `.bak`, `.disabled`): the runtime reads none, but one put
 * back must not call a meshcni that has left, so meshcni's entry is taken out of them too.
 */
const setAsideName = /^(.+\.(?:conf|conflist|json))\.[\w-]+$/;

/** A file of the net dir meshcni reads: a config, or one set aside. */
export const isNetDirFile = (name: string) => isConfigName(name) || setAsideName.test(name);

/** Reads a config the way libcni does: a .conflist needs plugins with types, a .conf a type. */
export function parseConfig(file: ConfigFile): ParsedConfig {
  const name = setAsideName.exec(file.name)?.[1] ?? file.name;
  let json: unknown;
  try {
    json = JSON.parse(file.text);
  } catch (error) {
    return { valid: false, reason: `not valid JSON (${errorMessage(error)})` };
  }
  if (!isJsonObject(json)) return { valid: false, reason: "not a JSON object" };
  if (name.endsWith(".conflist")) {
    const plugins = json.plugins;
    if (!Array.isArray(plugins) || plugins.length === 0) return { valid: false, reason: "a .conflist needs a non-empty plugins list" };
    if (!plugins.every((plugin) => isJsonObject(plugin) && typeof plugin.type === "string" && plugin.type !== "")) {
      return { valid: false, reason: "every plugin needs a type" };
    }
    return { valid: true, kind: "conflist", json };
  }
  if (typeof json.type !== "string" || json.type === "") return { valid: false, reason: "a .conf needs a type" };
  return { valid: true, kind: "conf", json };
}

/**
 * The config the runtime loads: the lexicographically first config file. containerd 1.6
 * does not skip one that does not load: its whole CNI load fails until it is fixed (see
 * docs/agent.md), so an invalid first file is the runtime's choice all the same.
 */
export function activeConfig(files: ConfigFile[]): { file: ConfigFile; config: ParsedConfig } | undefined {
  const [file] = loadOrder(files);
  return file && { file, config: parseConfig(file) };
}

/** The config files in the order runtimes read them (libcni's ConfFiles, sorted by name). */
export function loadOrder(files: ConfigFile[]): ConfigFile[] {
  return [...files].filter((f) => isConfigName(f.name)).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Why the runtime cannot load an invalid active config, for logs and readiness. */
export function brokenConfigReason(name: string, reason: string): string {
  return `${name} is not a valid CNI config (${reason}): containerd fails to load the CNI config dir until it is fixed or removed`;
}

/** The most a config file is read to: libcni has no limit, but no chain comes near it. */
const configMaxBytes = 1 << 20;

/**
 * The config files in the net dir as they are now, and those set aside; one vanishing
 * mid-read is skipped. So is an entry named as a config that is no regular file (a
 * directory, a fifo: never opened so as to block) or is over 1 MiB, each told to `skipped`
 * with why: libcni skips a directory too, and one such entry must not stop meshcni reading
 * the rest.
 */
export function readConfigFiles(netDir: string, skipped: (name: string, why: string) => void = () => undefined): ConfigFile[] {
  return readdirSync(netDir)
    .filter(isNetDirFile)
    .flatMap((name) => {
      try {
        const { text, stat } = readRegular(join(netDir, name), configMaxBytes);
        return [{ name, text, modifiedMs: stat.mtimeMs, mode: stat.mode & 0o7777 }];
      } catch (error) {
        if (error instanceof FileKindError || error instanceof FileTooLargeError) skipped(name, error.message);
        else if (errnoCode(error) !== "ENOENT") throw error;
        return [];
      }
    });
}
