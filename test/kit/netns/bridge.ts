/** Where a network's pods get their addresses: the bridge, the subnets, its block of them, host-local's data dir. */
export interface BridgeRanges {
  bridge: string;
  subnet: string;
  ipv6Subnet: string | undefined;
  /** The network's block of the subnet (0 to 7): 30 addresses of the IPv4 /24, and of the IPv6 /64. */
  block: number;
  dataDir: string;
}

/** The bridge plugin's entry (no gateway, no masquerade: nothing routes out), with host-local handing out the block's addresses. */
export function bridgeEntry({ bridge, subnet, ipv6Subnet, block, dataDir }: BridgeRanges): Record<string, unknown> {
  const prefix = subnet.replace(/\.0\/24$/, "");
  const ipv6Prefix = ipv6Subnet?.replace("::/64", "");
  return {
    type: "bridge",
    bridge,
    isGateway: false,
    ipMasq: false,
    ipam: {
      type: "host-local",
      ranges: [
        [{ subnet, rangeStart: `${prefix}.${block * 32 + 2}`, rangeEnd: `${prefix}.${block * 32 + 31}` }],
        ...(ipv6Subnet ? [[{ subnet: ipv6Subnet, rangeStart: `${ipv6Prefix}::${block}:2`, rangeEnd: `${ipv6Prefix}::${block}:ff` }]] : []),
      ],
      dataDir,
    },
  };
}
