import type { Family } from "./types.js";

/** Which iptables front end writes the rules; "plain" is whatever `iptables` is on the host. */
export type IptablesBackend = "legacy" | "nft" | "plain";
/** What writes the redirect: an iptables front end, or nf_tables over netlink in-process (no binary). */
export type Backend = IptablesBackend | "nftables";
export const backends = ["legacy", "nft", "plain", "nftables"] as const satisfies readonly Backend[];

/** What the netconf may ask for: a backend, or "auto" to detect the node's. */
export const iptablesModes = [...backends, "auto"] as const;
export type IptablesMode = (typeof iptablesModes)[number];

export function binaryName(backend: IptablesBackend, family: Family, tool: "save" | "restore"): string {
  const prefix = family === "ipv6" ? "ip6tables" : "iptables";
  return backend === "plain" ? `${prefix}-${tool}` : `${prefix}-${backend}-${tool}`;
}

/** Chains kubelet (1.17+) creates in the backend the node really uses. */
const kubeletChains = /^:(KUBE-IPTABLES-HINT|KUBE-KUBELET-CANARY)\b/m;

/** Runs a save command in the host netns and gives its stdout, or "" when it fails. */
export type SaveProbe = (binary: string, args: string[]) => Promise<string>;

export interface Detection {
  backend: "legacy" | "nft";
  /** True when kubelet's chains decided it; false for the default. */
  found: boolean;
}

/**
 * Detects the node's backend the way kubernetes-sigs/iptables-wrappers does: kubelet's
 * chains in nft's mangle table (IPv4, then IPv6) mean nft; in legacy's full dump (not
 * `-t mangle`, which would create the table) they mean legacy; with neither, nft. The
 * four probes run at once and are read in that order.
 */
export async function detectBackend(probe: SaveProbe): Promise<Detection> {
  const steps: Array<["legacy" | "nft", Family, string[]]> = [
    ["nft", "ipv4", ["-t", "mangle"]],
    ["nft", "ipv6", ["-t", "mangle"]],
    ["legacy", "ipv4", []],
    ["legacy", "ipv6", []],
  ];
  const outputs = await Promise.all(steps.map(([backend, family, args]) => probe(binaryName(backend, family, "save"), args)));
  const index = outputs.findIndex((output) => kubeletChains.test(output));
  return index < 0 ? { backend: "nft", found: false } : { backend: steps[index]![0], found: true };
}

/** Where a detection that kubelet's chains decided is kept: it holds until the node reboots. */
export interface DetectionCache {
  read(): "legacy" | "nft" | undefined;
  write(backend: "legacy" | "nft"): void;
}

/** iptables' restore binaries, per front end, for IPv4 and IPv6: with none of them, auto picks nftables. */
export const restoreBinaries = (["nft", "legacy"] as const).flatMap((backend) =>
  (["ipv4", "ipv6"] as const).map((family) => binaryName(backend, family, "restore")),
);

/**
 * The backend for a mode: auto detects the node's iptables backend (cached once kubelet's
 * chains decided it), or picks nftables when the host has no iptables binaries at all.
 */
export async function resolveBackend(
  mode: IptablesMode,
  probe: SaveProbe,
  cache?: DetectionCache,
  available: (binary: string) => boolean = () => true,
): Promise<Backend> {
  if (mode !== "auto") return mode;
  const cached = cache?.read();
  if (cached) return cached;
  if (!restoreBinaries.some(available)) return "nftables";
  const detection = await detectBackend(probe);
  // Without kubelet's chains the answer is a default that may change once kubelet runs.
  if (detection.found) cache?.write(detection.backend);
  return detection.backend;
}
