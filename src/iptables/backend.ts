import type { Family } from "./types.js";

/** Which iptables front end writes the rules; "plain" is whatever `iptables` is on the host. */
export type Backend = "legacy" | "nft" | "plain";

/** What the netconf may ask for: a backend, or "auto" to detect the node's. */
export const iptablesModes = ["legacy", "nft", "plain", "auto"] as const;
export type IptablesMode = (typeof iptablesModes)[number];

export function binaryName(backend: Backend, family: Family, tool: "save" | "restore"): string {
  const prefix = family === "ipv6" ? "ip6tables" : "iptables";
  return backend === "plain" ? `${prefix}-${tool}` : `${prefix}-${backend}-${tool}`;
}

/** Chains kubelet (1.17+) creates in the backend the node really uses. */
const kubeletChains = /^:(KUBE-IPTABLES-HINT|KUBE-KUBELET-CANARY)\b/m;

/** Runs a save command in the host netns and gives its stdout, or "" when it fails. */
export type SaveProbe = (binary: string, args: string[]) => Promise<string>;

/**
 * Detects the node's backend the way kubernetes-sigs/iptables-wrappers does: kubelet's
 * chains in nft's mangle table (IPv4, then IPv6) mean nft; in legacy's full dump (not
 * `-t mangle`, which would create the table) they mean legacy; with neither, nft.
 */
export async function detectBackend(probe: SaveProbe): Promise<"legacy" | "nft"> {
  const steps: Array<[Backend & ("legacy" | "nft"), Family, string[]]> = [
    ["nft", "ipv4", ["-t", "mangle"]],
    ["nft", "ipv6", ["-t", "mangle"]],
    ["legacy", "ipv4", []],
    ["legacy", "ipv6", []],
  ];
  for (const [backend, family, args] of steps) {
    if (kubeletChains.test(await probe(binaryName(backend, family, "save"), args))) return backend;
  }
  return "nft";
}

export async function resolveBackend(mode: IptablesMode, probe: SaveProbe): Promise<Backend> {
  return mode === "auto" ? detectBackend(probe) : mode;
}
