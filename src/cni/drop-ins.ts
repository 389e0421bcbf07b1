/**
 * libcni's drop-in dirs (1.3 on): a .conflist network's plugins are followed by every `*.conf`
 * in `<its dir>/<its name>/`, by name, unless it sets `loadOnlyInlinedPlugins`; a single
 * .conf loads none. Which network's dir the runtime reads, and meshcni's file there.
 */

import { readdirSync } from "node:fs";
import { join } from "node:path";
import { errnoCode } from "../errors.js";
import { FileKindError, FileTooLargeError, readRegular } from "../file-open.js";
import type { ConfigFile, ParsedConfig } from "./config-dir.js";

/** meshcni's drop-in, named to come after the others: its entry last, as in a conflist. */
export const dropInName = "zz-meshcni.conf";

/** One of meshcni's drop-ins on disk: the network whose dir holds it, and its text. */
export interface DropInFile {
  network: string;
  text: string;
}

/** The network whose drop-in dir the runtime loads with the active config, or why none is. */
export function dropInNetwork(file: ConfigFile, config: ParsedConfig): { network: string } | { why: string } {
  if (!config.valid) return { why: `${file.name} is not valid` };
  if (config.kind !== "conflist") return { why: `${file.name} is a single plugin's config: libcni loads drop-ins only for a .conflist` };
  const { name, loadOnlyInlinedPlugins } = config.json;
  if (loadOnlyInlinedPlugins === true || loadOnlyInlinedPlugins === "true")
    return { why: `${file.name} sets loadOnlyInlinedPlugins: the runtime loads no drop-in for it` };
  // libcni joins the name to the dir: one that is no plain file name would put the dir elsewhere.
  if (typeof name !== "string" || name === "" || name === "." || name === ".." || name.includes("/"))
    return { why: `${file.name}'s network name ${JSON.stringify(name)} cannot name a drop-in dir` };
  return { network: name };
}

/** The most a drop-in is read to: meshcni's is a few hundred bytes. */
const dropInMaxBytes = 64 << 10;

/** meshcni's drop-ins in the net dir's subdirs (real dirs, not links), with their text; one vanishing mid-read is skipped. */
export function readDropIns(netDir: string): DropInFile[] {
  return readdirSync(netDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap(({ name }) => {
      try {
        return [{ network: name, text: readRegular(join(netDir, name, dropInName), dropInMaxBytes).text }];
      } catch (error) {
        const code = errnoCode(error);
        // Something else in our drop-in's place is not ours to read: it is replaced when written.
        if (code === "ENOENT" || code === "ENOTDIR" || error instanceof FileKindError || error instanceof FileTooLargeError) return [];
        throw error;
      }
    });
}
