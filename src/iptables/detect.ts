import type { Family } from "../redirect/spec.js";
import { binaryName } from "./binaries.js";

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
