import { nftRuleset } from "../../kit/fixtures.js";

/** An ignored-ports rule in nft's syntax for a multiport list ("4190,30000:65535"). */
function portsRuleset(list: string): string {
  const set = list.replaceAll(":", "-").replaceAll(",", ", ");
  return `table ip meshcni {\n chain c {\n  tcp dport { ${set} } return comment "proxy-init/ignore-port-${list}"\n }\n}\n`;
}

/**
 * Small rulesets in nft's syntax, each what meshcni writes for one kind of rule or object:
 * test/kit/nftables/nft-golden.ts records the messages Debian's nft sends for each (golden.json),
 * and golden.test.ts checks meshcni's encoder sends the same bytes.
 */
export const goldenCases = {
  table: "table ip meshcni {\n}\n",
  baseChain: "table ip meshcni {\n chain PREROUTING {\n  type nat hook prerouting priority -100; policy accept;\n }\n}\n",
  outputChain: "table ip6 meshcni {\n chain OUTPUT {\n  type nat hook output priority -100; policy accept;\n }\n}\n",
  regularChain: "table ip meshcni {\n chain PROXY_INIT_OUTPUT {\n }\n}\n",
  jump: 'table ip meshcni {\n chain PROXY_INIT_REDIRECT {\n }\n chain PREROUTING {\n  jump PROXY_INIT_REDIRECT comment "proxy-init/install-proxy-init-prerouting"\n }\n}\n',
  uidReturn: 'table ip meshcni {\n chain c {\n  meta skuid 2102 return comment "proxy-init/ignore-proxy-user-id"\n }\n}\n',
  gidReturn: 'table ip meshcni {\n chain c {\n  meta skgid 2103 return comment "proxy-init/ignore-proxy-group-id"\n }\n}\n',
  loopbackReturn: 'table ip meshcni {\n chain c {\n  oifname "lo" return comment "proxy-init/ignore-loopback"\n }\n}\n',
  redirectAll:
    'table ip meshcni {\n chain c {\n  meta l4proto tcp redirect to :4143 comment "proxy-init/redirect-all-incoming-to-proxy-port"\n }\n}\n',
  redirectPort: 'table ip meshcni {\n chain c {\n  tcp dport 8080 redirect to :4143 comment "proxy-init/redirect-port-8080"\n }\n}\n',
  subnetByte: 'table ip meshcni {\n chain c {\n  ip saddr 10.1.0.0/16 return comment "proxy-init/ignore-subnet-10.1.0.0/16"\n }\n}\n',
  subnetBits: 'table ip meshcni {\n chain c {\n  ip saddr 10.16.0.0/12 return comment "proxy-init/ignore-subnet-10.16.0.0/12"\n }\n}\n',
  subnetHost: 'table ip meshcni {\n chain c {\n  ip saddr 192.168.1.7 return comment "proxy-init/ignore-subnet-192.168.1.7/32"\n }\n}\n',
  subnet6: 'table ip6 meshcni {\n chain c {\n  ip6 saddr fd00::/12 return comment "proxy-init/ignore-subnet-fd00::/12"\n }\n}\n',
  portSet: 'table ip meshcni {\n chain c {\n  tcp dport { 4191, 4190 } return comment "proxy-init/ignore-port-4191,4190"\n }\n}\n',
  portRanges:
    'table ip meshcni {\n chain c {\n  tcp dport { 4190, 8000-8010 } return comment "proxy-init/ignore-port-4190,8000:8010"\n }\n}\n',
  portRangeToTop: portsRuleset("4190,30000:65535"),
  portRangeTopPair: portsRuleset("4190,65534:65535"),
  portTopInRanges: portsRuleset("1:4,65535"),
  portRangeFromZero: portsRuleset("0:1,4190"),
  portEdges: portsRuleset("1,65535"),
  deleteTable: "table ip meshcni {\n}\ndelete table ip meshcni\n",
};

/** Rulesets as meshcni writes them, loaded by nft: dumps.test.ts reads the kernel's `nft list table` answers back. */
export const dumpCases = {
  ipv4: {
    table: "ip meshcni",
    ruleset: nftRuleset(
      "ip",
      [
        'tcp dport { 4191, 4190 } return comment "proxy-init/ignore-port-4191,4190"',
        'ip saddr 10.16.0.0/12 return comment "proxy-init/ignore-subnet-10.16.0.0/12"',
        'ip saddr 192.168.0.0/16 return comment "proxy-init/ignore-subnet-192.168.0.0/16"',
        'meta l4proto tcp redirect to :4143 comment "proxy-init/redirect-all-incoming-to-proxy-port"',
      ],
      [
        'meta skuid 2102 return comment "proxy-init/ignore-proxy-user-id"',
        'meta skgid 2103 return comment "proxy-init/ignore-proxy-group-id"',
        'oifname "lo" return comment "proxy-init/ignore-loopback"',
        'tcp dport { 9091, 9200-9210 } return comment "proxy-init/ignore-port-9091,9200:9210"',
        'meta l4proto tcp redirect to :4140 comment "proxy-init/redirect-all-outgoing-to-proxy-port"',
      ],
    ),
  },
  openRanges: {
    table: "ip meshcni",
    ruleset: nftRuleset(
      "ip",
      [
        'tcp dport { 4190, 30000-65535 } return comment "proxy-init/ignore-port-4190,30000:65535"',
        'meta l4proto tcp redirect to :4143 comment "proxy-init/redirect-all-incoming-to-proxy-port"',
      ],
      [
        'meta skuid 2102 return comment "proxy-init/ignore-proxy-user-id"',
        'meta skgid 2103 return comment "proxy-init/ignore-proxy-group-id"',
        'oifname "lo" return comment "proxy-init/ignore-loopback"',
        'tcp dport { 1-4, 65535 } return comment "proxy-init/ignore-port-1:4,65535"',
        'meta l4proto tcp redirect to :4140 comment "proxy-init/redirect-all-outgoing-to-proxy-port"',
      ],
    ),
  },
  ipv6: {
    table: "ip6 meshcni",
    ruleset: `table ip6 meshcni {
 chain PROXY_INIT_REDIRECT {
  ip6 saddr fd00::/12 return comment "proxy-init/ignore-subnet-fd00::/12"
  tcp dport 8080 redirect to :4143 comment "proxy-init/redirect-port-8080"
 }
 chain PREROUTING {
  type nat hook prerouting priority 0; policy accept;
  jump PROXY_INIT_REDIRECT comment "proxy-init/install-proxy-init-prerouting"
 }
}
`,
  },
};

/** A rule the kernel refuses (a jump to no chain): its error names the attribute. */
export const refusedCase = "table ip meshcni {\n chain c {\n  jump nochain\n }\n}\n";
