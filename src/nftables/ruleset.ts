import type { Family } from "../redirect/spec.js";
import { decodeChain, HOOK_OUTPUT, HOOK_PREROUTING, type NftChain, newChain, PRIORITY_DSTNAT } from "./chain.js";
import type { BatchPart } from "./message.js";
import type { NetlinkMessage } from "./netlink.js";
import { decodeRule, type NftRule, newRule } from "./rule.js";
import { decodeElements, decodeSet, type NftSet, newSet } from "./set.js";
import { tableNames } from "./table.js";

/**
 * One table's contents as nf_tables objects, pure: what meshcni writes (from-plan.ts makes
 * it from a plan) as batch messages, and what dumps return assembled into the same shape
 * (to-plan.ts reads it as a plan). Each object's encoding is in its own file.
 */
export interface NftTable {
  family: Family;
  name: string;
  chains: NftChain[];
  sets: NftSet[];
  rules: NftRule[];
}

/** The messages that create a table's contents (its chains, then its sets and rules), after the table itself. */
export function tableContents(table: NftTable): BatchPart[] {
  return [
    ...table.chains.map((chain) => newChain(table.family, table.name, chain)),
    ...table.sets.flatMap((set) => newSet(table.family, table.name, set)),
    ...table.rules.map((rule) => newRule(table.family, table.name, rule)),
  ];
}

/** Messages from dumps of one family: tables, chains, sets, rules, and per set name its elements' messages. */
export interface Dumps {
  tables: NetlinkMessage[];
  chains: NetlinkMessage[];
  sets: NetlinkMessage[];
  rules: NetlinkMessage[];
  elements: Map<string, NetlinkMessage[]>;
}

/** Builds one table from the dumps, or undefined when there is no such table. */
export function decodeTable(family: Family, name: string, dumps: Dumps): NftTable | undefined {
  if (!tableNames(dumps.tables).includes(name)) return undefined;
  const inTable = <T>(decoded: Array<{ table: string | undefined } & T>) => decoded.filter((object) => object.table === name);
  const chains = inTable(dumps.chains.map(decodeChain)).map(({ chain }) => chain);
  const sets = inTable(dumps.sets.map(decodeSet)).map(({ set }) => ({
    ...set,
    elements: (dumps.elements.get(set.name) ?? []).flatMap(decodeElements),
  }));
  const rules = inTable(dumps.rules.map(decodeRule)).map(({ rule }) => rule);
  return { family, name, chains, sets, rules };
}

/** meshcni's table in each family (`ip meshcni`, `ip6 meshcni`). */
export const tableName = "meshcni";

/** The built-in chains of iptables' nat table, as base chains of our table. */
export const baseChains: Record<string, NonNullable<NftChain["hook"]>> = {
  PREROUTING: { num: HOOK_PREROUTING, priority: PRIORITY_DSTNAT, type: "nat", policy: 1 },
  OUTPUT: { num: HOOK_OUTPUT, priority: PRIORITY_DSTNAT, type: "nat", policy: 1 },
};

/** Where the source address is in each family's header. */
export const saddrOffset = { ipv4: 12, ipv6: 8 } as const;
export const IPPROTO_TCP = 6;
/** The highest port: an interval that reaches it has no end element. */
export const MAX_PORT = 65535;

/** A multiport list ("4191,4190" or "8000:8010"): sorted port ranges, adjacent and overlapping ones merged. */
export function portRanges(list: string): Array<[number, number]> {
  const ranges = list
    .split(",")
    .map((item) => item.split(":").map(Number) as [number, number?])
    .map(([from, to]): [number, number] => [from, to ?? from])
    .sort((a, b) => a[0] - b[0]);
  const merged: Array<[number, number]> = [];
  for (const [from, to] of ranges) {
    const last = merged.at(-1);
    if (last && from <= last[1] + 1) last[1] = Math.max(last[1], to);
    else merged.push([from, to]);
  }
  return merged;
}
