/**
 * What the runtime says it loaded from the CNI config dir: CRI `Status` with `verbose` puts
 * go-cni's ConfigResult, as JSON, in `info["cniconfig"]` (containerd; kubelet asks it every
 * few seconds). Its networks each name the interface they make; the default network's is the
 * prefix's first (`eth0`); `cni-loopback` comes first. Each plugin has its parsed netconf
 * (`Network`) and the bytes it was loaded from (`Source`), a drop-in's keys kept there.
 * Pure: the status's info in, the default network's chain out.
 */

import { isJsonObject, type JsonObject } from "../json.js";

export interface LoadedPlugin {
  type: string;
  /** The plugin's config as loaded (its Source), when it parses as a JSON object. */
  config: JsonObject | undefined;
}

export type LoadedChain = { network: string; plugins: LoadedPlugin[] } | { unknown: string };

/** The key of the verbose status's info that holds the loaded CNI config. */
export const cniConfigKey = "cniconfig";

function parsed(text: unknown): unknown {
  if (typeof text !== "string") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The chain the runtime would run for a new pod's default interface, or why it does not say. */
export function loadedDefaultChain(info: Record<string, string>): LoadedChain {
  const text = info[cniConfigKey];
  if (text === undefined)
    return {
      unknown: `the container runtime's status has no "${cniConfigKey}" (CRI-O, and containerd before 1.5, do not say what they loaded)`,
    };
  const result = parsed(text);
  if (!isJsonObject(result)) return { unknown: `the container runtime's "${cniConfigKey}" is not a JSON object` };
  const prefix = typeof result.Prefix === "string" && result.Prefix !== "" ? result.Prefix : "eth";
  const networks = Array.isArray(result.Networks) ? result.Networks.filter(isJsonObject) : [];
  const found = networks.find((network) => network.IFName === `${prefix}0`);
  const config = found?.Config;
  if (!isJsonObject(config) || typeof config.Name !== "string")
    return { unknown: `the container runtime has loaded no network for ${prefix}0` };
  const plugins = (Array.isArray(config.Plugins) ? config.Plugins.filter(isJsonObject) : []).map((plugin) => {
    const network = isJsonObject(plugin.Network) ? plugin.Network : {};
    const source = parsed(plugin.Source);
    return { type: typeof network.type === "string" ? network.type : "", config: isJsonObject(source) ? source : undefined };
  });
  return { network: config.Name, plugins };
}
