import { describe, expect, it } from "vitest";
import { ruleExprs } from "../../../src/nftables/from-plan.js";
import type { BatchPart } from "../../../src/nftables/message.js";
import { type NftTable, tableContents, tableName } from "../../../src/nftables/ruleset.js";
import type { NftSet } from "../../../src/nftables/set.js";
import { deleteTable, newTable } from "../../../src/nftables/table.js";
import type { Family } from "../../../src/redirect/spec.js";
import type { goldenCases } from "./cases.js";
import recorded from "./golden.json" with { type: "json" };

const comment = (text: string) => ["-m", "comment", "--comment", `proxy-init/${text}`];

/** Each golden case as meshcni writes it: a table, a chain "c" and one rule of planRules' vocabulary. */
function ruleCase(args: string[], family: Family = "ipv4"): BatchPart[] {
  let id = 0;
  const sets: NftSet[] = [];
  const rule = { chain: "c", ...ruleExprs(args, family, sets, () => ++id) };
  const table: NftTable = { family, name: tableName, chains: [{ name: "c" }], sets, rules: [rule] };
  return [newTable(family, tableName, false), ...tableContents(table)];
}

/** An ignored-ports rule for a multiport list, as planRules writes it. */
const portsCase = (list: string) =>
  ruleCase(["-p", "tcp", "-m", "multiport", "--dports", list, ...comment(`ignore-port-${list}`), "-j", "RETURN"]);

const chainCase = (table: Omit<NftTable, "name" | "sets">): BatchPart[] => [
  newTable(table.family, tableName, false),
  ...tableContents({ ...table, name: tableName, sets: [] }),
];

const dstnat = (num: number) => ({ num, priority: -100, type: "nat", policy: 1 });

const ours: Record<keyof typeof goldenCases, BatchPart[]> = {
  table: [newTable("ipv4", tableName, false)],
  baseChain: chainCase({ family: "ipv4", chains: [{ name: "PREROUTING", hook: dstnat(0) }], rules: [] }),
  outputChain: chainCase({ family: "ipv6", chains: [{ name: "OUTPUT", hook: dstnat(3) }], rules: [] }),
  regularChain: chainCase({ family: "ipv4", chains: [{ name: "PROXY_INIT_OUTPUT" }], rules: [] }),
  jump: chainCase({
    family: "ipv4",
    chains: [{ name: "PROXY_INIT_REDIRECT" }, { name: "PREROUTING" }],
    rules: [
      {
        chain: "PREROUTING",
        ...ruleExprs([...comment("install-proxy-init-prerouting"), "-j", "PROXY_INIT_REDIRECT"], "ipv4", [], () => 0),
      },
    ],
  }),
  uidReturn: ruleCase(["-m", "owner", "--uid-owner", "2102", ...comment("ignore-proxy-user-id"), "-j", "RETURN"]),
  gidReturn: ruleCase(["-m", "owner", "--gid-owner", "2103", ...comment("ignore-proxy-group-id"), "-j", "RETURN"]),
  loopbackReturn: ruleCase(["-o", "lo", ...comment("ignore-loopback"), "-j", "RETURN"]),
  redirectAll: ruleCase(["-p", "tcp", ...comment("redirect-all-incoming-to-proxy-port"), "-j", "REDIRECT", "--to-ports", "4143"]),
  redirectPort: ruleCase([
    "-p",
    "tcp",
    "-m",
    "tcp",
    "--dport",
    "8080",
    ...comment("redirect-port-8080"),
    "-j",
    "REDIRECT",
    "--to-ports",
    "4143",
  ]),
  subnetByte: ruleCase(["-s", "10.1.0.0/16", ...comment("ignore-subnet-10.1.0.0/16"), "-j", "RETURN"]),
  subnetBits: ruleCase(["-s", "10.16.0.0/12", ...comment("ignore-subnet-10.16.0.0/12"), "-j", "RETURN"]),
  subnetHost: ruleCase(["-s", "192.168.1.7/32", ...comment("ignore-subnet-192.168.1.7/32"), "-j", "RETURN"]),
  subnet6: ruleCase(["-s", "fd00::/12", ...comment("ignore-subnet-fd00::/12"), "-j", "RETURN"], "ipv6"),
  portSet: portsCase("4191,4190"),
  portRanges: portsCase("4190,8000:8010"),
  portRangeToTop: portsCase("4190,30000:65535"),
  portRangeTopPair: portsCase("4190,65534:65535"),
  portTopInRanges: portsCase("1:4,65535"),
  portRangeFromZero: portsCase("0:1,4190"),
  portEdges: portsCase("1,65535"),
  deleteTable: [newTable("ipv4", tableName, false), deleteTable("ipv4", tableName)],
};

/** A message without its sequence number: type, flags, and the bytes after the netlink header. */
function shape(bytes: Uint8Array) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  expect(view.getUint32(0, true)).toBe(bytes.byteLength);
  return { type: view.getUint16(4, true), flags: view.getUint16(6, true), body: Buffer.from(bytes.subarray(16)).toString("hex") };
}

describe(`the nftables encoder sends what ${recorded.nft} sends`, () => {
  it.each(Object.keys(ours) as Array<keyof typeof goldenCases>)("%s", (name) => {
    expect(ours[name].map((part, index) => shape(part.make(index + 1)))).toEqual(recorded.golden[name]);
  });
});
