/**
 * meshcni chained by a drop-in: its entry as a file of its own in the active network's
 * drop-in dir, which libcni (1.3 on) appends to the network's plugins (`<net dir>/<network
 * name>/*.conf`, by name), so the primary's files are never written. Only a .conflist network
 * loads them, and none that sets `loadOnlyInlinedPlugins`. The runtime reads the dir only when
 * it reloads the config dir, on a write, rename or removal there (containerd ignores a
 * file created): so a drop-in change alone is followed by a file made and removed in the dir.
 * Pure: files in, the plan out.
 */

import { activeConfig, type ConfigFile, parseConfig } from "../cni/config-dir.js";
import { type DropInFile, dropInNetwork } from "../cni/drop-ins.js";
import type { JsonObject } from "../json.js";
import { withoutEntry } from "./conflist.js";

/** `--chain-by`: `auto`, a drop-in where the runtime says it loads it, else the entry in the active config; `conflist`, the entry always. */
export const chainByChoices = ["auto", "conflist"] as const;

/** Made and removed in the config dir so that the runtime reloads it: a removal is an event every runtime reloads on. */
export const reloadTriggerName = ".meshcni-reload";

/**
 * How meshcni is chained: `asking` (the runtime not asked yet: nothing written), `probe` (a
 * drop-in that passes the result on, to see whether the runtime loads it; the conflist entry,
 * if any, still does the work), `dropin` (its entry as the drop-in; `proven` once the runtime
 * said it loaded it), or `conflist` (its entry last in the active config, as before libcni 1.3).
 */
export type ChainMode = { kind: "asking" } | { kind: "probe" } | { kind: "dropin"; proven: boolean } | { kind: "conflist"; why: string };

const render = (json: JsonObject) => `${JSON.stringify(json, null, 2)}\n`;

/** The drop-in's text: the entry, or in the probe, only its type and `probe` (the plugin then passes the result on). */
export function dropInText(entry: JsonObject, probe: boolean): string {
  return render(probe ? { type: entry.type, probe: true } : entry);
}

/** Whether a drop-in's text is the probe's: the plugin passes the result on and writes nothing. */
export const isProbe = (config: JsonObject | undefined) => config?.probe === true;

export type DropInPlan =
  | {
      kind: "dropin";
      network: string;
      /** The drop-in's text to write into the network's dir, when it is not there as it should be. */
      write: string | undefined;
      /** Configs that hold meshcni's entry, as they are without it (the drop-in replaces it: written after it). */
      removals: Array<{ name: string; text: string }>;
      /** Networks whose dir holds a drop-in of meshcni's that goes (another network is active now). */
      stale: string[];
      /** A drop-in changed and nothing is written in the config dir itself (any write there reloads it): make the runtime reload. */
      reload: boolean;
    }
  | { kind: "fallback"; why: string };

/**
 * The drop-in for the active config (valid: the caller waits out an invalid one), in the
 * probe or as the entry. As the entry, every config's own entry goes, written after the
 * drop-in: the runtime reloads on that write and finds meshcni once, in the drop-in; until
 * then it runs the conflist's.
 */
export function planDropIn(files: ConfigFile[], found: DropInFile[], entry: JsonObject, probe: boolean): DropInPlan {
  const active = activeConfig(files);
  if (!active) return { kind: "fallback", why: "there is no CNI config" };
  const target = dropInNetwork(active.file, active.config);
  if ("why" in target) return { kind: "fallback", why: target.why };
  const { network } = target;
  const text = dropInText(entry, probe);
  const write = found.find((dropIn) => dropIn.network === network)?.text === text ? undefined : text;
  const stale = found.filter((dropIn) => dropIn.network !== network).map((dropIn) => dropIn.network);
  const removals = probe
    ? []
    : files.flatMap((file) => {
        const without = withoutEntry(parseConfig(file), entry.type as string);
        return without === undefined ? [] : [{ name: file.name, text: without }];
      });
  const reload = (write !== undefined || stale.length > 0) && removals.length === 0;
  return { kind: "dropin", network, write, removals, stale, reload };
}
