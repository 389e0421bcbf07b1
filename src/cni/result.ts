import { type CniVersion, compareVersions } from "./version.js";

type JsonObject = Record<string, unknown>;

/**
 * Converts a prevResult to the config's cniVersion. 0.3.x/0.4.0 results carry
 * `version` ("4"/"6") on each IP; 1.x results do not. Every other key is kept.
 */
export function convertResult(result: JsonObject, to: CniVersion): JsonObject {
  const modern = compareVersions(to, "1.0.0") >= 0;
  const ips = Array.isArray(result.ips)
    ? result.ips.map((entry: unknown) => {
        if (typeof entry !== "object" || entry === null) return entry;
        const { version, ...rest } = entry as JsonObject;
        if (modern) return rest;
        const address = typeof rest.address === "string" ? rest.address : "";
        return { version: version ?? (address.includes(":") ? "6" : "4"), ...rest };
      })
    : undefined;
  return { ...result, cniVersion: to, ...(ips ? { ips } : {}) };
}

/** The addresses a result gives the container, as `ip/prefix` strings. */
export function resultAddresses(result: JsonObject | undefined): string[] {
  if (!result || !Array.isArray(result.ips)) return [];
  return result.ips.flatMap((entry: unknown) => {
    const address = (entry as JsonObject | null)?.address;
    return typeof address === "string" ? [address] : [];
  });
}
