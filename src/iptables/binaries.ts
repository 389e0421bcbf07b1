import type { IptablesBackend } from "../redirect/redirector.js";
import type { Family } from "../redirect/spec.js";

export type IptablesTool = "save" | "restore";

/** The binary of one front end's tool for one family: `ip6tables-legacy-restore`, `iptables-save` (plain)… */
export function binaryName(backend: IptablesBackend, family: Family, tool: IptablesTool): string {
  const prefix = family === "ipv6" ? "ip6tables" : "iptables";
  return backend === "plain" ? `${prefix}-${tool}` : `${prefix}-${backend}-${tool}`;
}

/** Every binary of the named front ends (nft, legacy), IPv4 and IPv6, these tools: what the host is checked for. */
export function namedBinaries(tools: readonly IptablesTool[]): string[] {
  return (["nft", "legacy"] as const).flatMap((backend) =>
    (["ipv4", "ipv6"] as const).flatMap((family) => tools.map((tool) => binaryName(backend, family, tool))),
  );
}
