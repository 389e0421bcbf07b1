import { CniError, ErrorCode } from "./errors.js";

/** Versions this plugin reads and writes; 0.1.0 and 0.2.0 results predate chaining. */
export const supportedVersions = ["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"] as const;
export type CniVersion = (typeof supportedVersions)[number];
export const latestVersion: CniVersion = "1.1.0";

export function isSupportedVersion(version: unknown): version is CniVersion {
  return typeof version === "string" && (supportedVersions as readonly string[]).includes(version);
}

/** Compares dotted versions numerically: negative when a < b. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split(".").map(Number);
  const pb = b.split(".").map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const diff = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (diff !== 0) return diff;
  }
  return 0;
}

export function requireSupportedVersion(version: unknown): CniVersion {
  if (isSupportedVersion(version)) return version;
  throw new CniError(
    ErrorCode.incompatibleVersion,
    `incompatible CNI version: config has cniVersion ${JSON.stringify(version)}, meshcni supports ${supportedVersions.join(", ")}`,
  );
}

/** The VERSION verb's answer. */
export function versionInfo(requested: unknown): Record<string, unknown> {
  return {
    cniVersion: isSupportedVersion(requested) ? requested : latestVersion,
    supportedVersions: [...supportedVersions],
  };
}
