import ipaddr from "ipaddr.js";

/**
 * A subnet's network as iptables-save prints the `-s` it was given: host bits cleared
 * (`1.1.1.1/24` is `1.1.1.0/24`), IPv6 compressed. The input is a CIDR the netconf or an
 * annotation already validated (tokens.ts).
 */
export function subnetNetwork(cidr: string): string {
  const network = cidr.includes(":") ? ipaddr.IPv6.networkAddressFromCIDR(cidr) : ipaddr.IPv4.networkAddressFromCIDR(cidr);
  return `${network.toString()}/${cidr.slice(cidr.indexOf("/") + 1)}`;
}
