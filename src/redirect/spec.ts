/** An inclusive port range; a single port has from === to. */
export interface PortRange {
  from: number;
  to: number;
}

export type Family = "ipv4" | "ipv6";

/** Everything that decides a pod's redirect rules, validated and normalised. */
export interface FirewallSpec {
  inboundProxyPort: number;
  outboundProxyPort: number;
  proxyUid: number;
  proxyGid?: number;
  /** Inbound ports to redirect; empty means every inbound TCP port. */
  portsToRedirect: number[];
  inboundPortsToIgnore: PortRange[];
  outboundPortsToIgnore: PortRange[];
  /** Source subnets whose inbound traffic skips the proxy, as normalised CIDRs. */
  subnetsToIgnore: string[];
}
