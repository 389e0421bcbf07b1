import ipaddr from "ipaddr.js";
import type { RulePlan } from "../redirect/plan.js";
import type { Family } from "../redirect/spec.js";
import type { NatTable } from "../redirect/table.js";
import { readU16be, readU32host, u16be, u32host } from "./netlink.js";

/**
 * meshcni's redirect as nf_tables objects, pure: a plan (iptables' vocabulary, which the
 * records and the diff speak) becomes a table of chains, anonymous sets and rules of
 * expressions, and a table read back becomes the plan's vocabulary again, so CHECK and
 * the audit diff it with the same messages as iptables'. Only what planRules writes is
 * translated; anything else read back shows as an `nft:` token, which the diff reports.
 */

export const tableName = "meshcni";
export const nfproto = { ipv4: 2, ipv6: 10 } as const;

// Registers, verdicts, keys and bases from linux/netfilter/nf_tables.h.
export const REG_VERDICT = 0;
export const REG_1 = 1;
export const VERDICT_RETURN = -5;
export const VERDICT_JUMP = -3;
export const META_OIFNAME = 7;
export const META_SKUID = 10;
export const META_SKGID = 11;
export const META_L4PROTO = 16;
export const BASE_NETWORK = 1;
export const BASE_TRANSPORT = 2;
export const CMP_EQ = 0;
/** NF_NAT_RANGE_PROTO_SPECIFIED: the redirect names a port. */
export const NAT_RANGE_PROTO_SPECIFIED = 2;
export const HOOK_PREROUTING = 0;
export const HOOK_OUTPUT = 3;
/** NF_IP_PRI_NAT_DST: where iptables' nat PREROUTING and OUTPUT hook. */
export const PRIORITY_DSTNAT = -100;
const IPPROTO_TCP = 6;

export type Expr =
  | { kind: "meta"; key: number; dreg: number }
  | { kind: "cmp"; sreg: number; op: number; data: Uint8Array }
  | { kind: "payload"; dreg: number; base: number; offset: number; len: number }
  | { kind: "bitwise"; sreg: number; dreg: number; len: number; mask: Uint8Array; xor: Uint8Array }
  | { kind: "lookup"; sreg: number; set: string; setId: number | undefined }
  | { kind: "verdict"; code: number; chain: string | undefined }
  | { kind: "immediate"; dreg: number; data: Uint8Array }
  | { kind: "redir"; protoMin: number; flags: number }
  | { kind: "other"; name: string };

export interface NftRule {
  chain: string;
  exprs: Expr[];
  comment: string | undefined;
}

/** An anonymous set of TCP ports: single ports, or intervals (start, then end + 1 flagged as an end). */
export interface NftSet {
  name: string;
  id: number;
  interval: boolean;
  elements: Array<{ key: number; end: boolean }>;
}

export interface NftChain {
  name: string;
  /** Base chains: where they hook. */
  hook?: { num: number; priority: number; type: string; policy: number };
}

export interface NftTable {
  family: Family;
  name: string;
  chains: NftChain[];
  sets: NftSet[];
  rules: NftRule[];
}

/** The built-in chains of iptables' nat table, as base chains of our table. */
const baseChains: Record<string, NonNullable<NftChain["hook"]>> = {
  PREROUTING: { num: HOOK_PREROUTING, priority: PRIORITY_DSTNAT, type: "nat", policy: 1 },
  OUTPUT: { num: HOOK_OUTPUT, priority: PRIORITY_DSTNAT, type: "nat", policy: 1 },
};

/** A UID or GID compared in a rule: 4 bytes, host order (-1, which no plan holds, for anything else). */
const ownerId = (bytes: Uint8Array) => (bytes.byteLength === 4 ? readU32host(bytes)! : -1);
const ifname = (name: string) => {
  const bytes = new Uint8Array(16);
  bytes.set(new TextEncoder().encode(name).subarray(0, 15));
  return bytes;
};
const saddrOffset = { ipv4: 12, ipv6: 8 } as const;

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

const renderRanges = (ranges: Array<[number, number]>) =>
  ranges.map(([from, to]) => (from === to ? String(from) : `${from}:${to}`)).join(",");

/**
 * The plan as this backend reads it back: a multiport list is a set, so its order and
 * the split of adjacent ports are not kept; both sides of a diff use the sorted, merged
 * form.
 */
export function canonicalPlan(plan: RulePlan): RulePlan {
  const canonical = (args: string[]) => args.map((token, i) => (args[i - 1] === "--dports" ? renderRanges(portRanges(token)) : token));
  return {
    family: plan.family,
    chains: Object.fromEntries(Object.entries(plan.chains).map(([chain, rules]) => [chain, rules.map(canonical)])),
    jumps: plan.jumps.map((jump) => ({ ...jump, args: canonical(jump.args) })),
  };
}

/** An anonymous set of ports as nft writes it: intervals (merged, led by an end at 0) only when the list has a range. */
function portSet(list: string, id: number): NftSet {
  const ranges = portRanges(list);
  const interval = list.includes(":");
  // Single ports keep the plan's order, as nft sends them; a hash set does not keep it anyway.
  if (!interval)
    return { name: "__set%d", id, interval, elements: [...new Set(list.split(",").map(Number))].map((key) => ({ key, end: false })) };
  const elements = ranges.flatMap(([from, to]) => [
    { key: from, end: false },
    { key: to + 1, end: true },
  ]);
  // nft closes the gap below the first interval with an end element at 0.
  return { name: "__set%d", id, interval, elements: ranges[0]![0] > 0 ? [{ key: 0, end: true }, ...elements] : elements };
}

/** The expressions of one planned rule (iptables arguments); sets it needs are added to `sets`. */
export function ruleExprs(
  args: string[],
  family: Family,
  sets: NftSet[],
  nextSetId: () => number,
): { exprs: Expr[]; comment: string | undefined } {
  const exprs: Expr[] = [];
  let comment: string | undefined;
  const take = (expected: string[], at: number) => expected.every((token, i) => args[at + i] === token);
  for (let i = 0; i < args.length; ) {
    if (take(["-p", "tcp"], i)) {
      exprs.push(
        { kind: "meta", key: META_L4PROTO, dreg: REG_1 },
        { kind: "cmp", sreg: REG_1, op: CMP_EQ, data: new Uint8Array([IPPROTO_TCP]) },
      );
      i += 2;
    } else if (take(["-m", "multiport", "--dports"], i)) {
      const set = portSet(args[i + 3]!, nextSetId());
      sets.push(set);
      exprs.push(
        { kind: "payload", dreg: REG_1, base: BASE_TRANSPORT, offset: 2, len: 2 },
        { kind: "lookup", sreg: REG_1, set: set.name, setId: set.id },
      );
      i += 4;
    } else if (take(["-m", "tcp", "--dport"], i)) {
      exprs.push(
        { kind: "payload", dreg: REG_1, base: BASE_TRANSPORT, offset: 2, len: 2 },
        { kind: "cmp", sreg: REG_1, op: CMP_EQ, data: u16be(Number(args[i + 3])) },
      );
      i += 4;
    } else if (take(["-s"], i)) {
      exprs.push(...sourceExprs(args[i + 1]!, family));
      i += 2;
    } else if (take(["-m", "owner", "--uid-owner"], i) || take(["-m", "owner", "--gid-owner"], i)) {
      const key = args[i + 2] === "--uid-owner" ? META_SKUID : META_SKGID;
      exprs.push({ kind: "meta", key, dreg: REG_1 }, { kind: "cmp", sreg: REG_1, op: CMP_EQ, data: u32host(Number(args[i + 3])) });
      i += 4;
    } else if (take(["-o"], i)) {
      exprs.push({ kind: "meta", key: META_OIFNAME, dreg: REG_1 }, { kind: "cmp", sreg: REG_1, op: CMP_EQ, data: ifname(args[i + 1]!) });
      i += 2;
    } else if (take(["-m", "comment", "--comment"], i)) {
      comment = args[i + 3];
      i += 4;
    } else if (take(["-j", "RETURN"], i)) {
      exprs.push({ kind: "verdict", code: VERDICT_RETURN, chain: undefined });
      i += 2;
    } else if (take(["-j", "REDIRECT", "--to-ports"], i)) {
      exprs.push(
        { kind: "immediate", dreg: REG_1, data: u16be(Number(args[i + 3])) },
        { kind: "redir", protoMin: REG_1, flags: NAT_RANGE_PROTO_SPECIFIED },
      );
      i += 4;
    } else if (take(["-j"], i)) {
      exprs.push({ kind: "verdict", code: VERDICT_JUMP, chain: args[i + 1] });
      i += 2;
    } else throw new Error(`no nftables translation for ${JSON.stringify(args.slice(i).join(" "))}`);
  }
  return { exprs, comment };
}

/** `-s CIDR` as nft writes it: a whole-byte prefix loads only those bytes; another is masked. */
function sourceExprs(cidr: string, family: Family): Expr[] {
  const [address, prefixText] = cidr.split("/");
  const prefix = Number(prefixText);
  const bytes = Uint8Array.from(ipaddr.parse(address!).toByteArray());
  const offset = saddrOffset[family];
  if (prefix > 0 && prefix % 8 === 0) {
    const len = prefix / 8;
    return [
      { kind: "payload", dreg: REG_1, base: BASE_NETWORK, offset, len },
      { kind: "cmp", sreg: REG_1, op: CMP_EQ, data: bytes.subarray(0, len) },
    ];
  }
  const mask = bytes.map((_, i) => (0xff << (8 - Math.min(8, Math.max(0, prefix - i * 8)))) & 0xff);
  return [
    { kind: "payload", dreg: REG_1, base: BASE_NETWORK, offset, len: bytes.length },
    { kind: "bitwise", sreg: REG_1, dreg: REG_1, len: bytes.length, mask, xor: new Uint8Array(bytes.length) },
    { kind: "cmp", sreg: REG_1, op: CMP_EQ, data: bytes },
  ];
}

/**
 * One family's plan as our table: its chains (ours, then the base chains the jumps sit
 * in), the anonymous sets its port lists need (ids from `nextSetId`, unique within a
 * batch), and every rule in order.
 */
export function planTable(plan: RulePlan, nextSetId: () => number): NftTable {
  const sets: NftSet[] = [];
  const rules: NftRule[] = [
    ...Object.entries(plan.chains).flatMap(([chain, planned]) =>
      planned.map((args) => ({ chain, ...ruleExprs(args, plan.family, sets, nextSetId) })),
    ),
    ...plan.jumps.map((jump) => ({ chain: jump.from, ...ruleExprs(jump.args, plan.family, sets, nextSetId) })),
  ];
  const chains: NftChain[] = [
    ...Object.keys(plan.chains).map((name) => ({ name })),
    ...[...new Set(plan.jumps.map((jump) => jump.from))].map((name) => ({ name, hook: baseChains[name]! })),
  ];
  return { family: plan.family, name: tableName, chains, sets, rules };
}

/** A set's ports as a multiport list (sorted, merged), or undefined when it holds something else. */
function setPorts(set: NftSet | undefined): string | undefined {
  if (!set) return undefined;
  const keys = [...set.elements].sort((a, b) => a.key - b.key || Number(a.end) - Number(b.end));
  if (!set.interval) return renderRanges(portRanges(keys.map((element) => String(element.key)).join(",")));
  const ranges: Array<[number, number]> = [];
  let start: number | undefined;
  for (const { key, end } of keys) {
    if (!end) start = key;
    else if (start !== undefined) {
      ranges.push([start, key - 1]);
      start = undefined;
    }
  }
  return ranges.length > 0 ? renderRanges(portRanges(renderRanges(ranges))) : undefined;
}

/** A load of the TCP destination port. */
const isDport = (expr: Expr) => expr.kind === "payload" && expr.base === BASE_TRANSPORT && expr.offset === 2 && expr.len === 2;

/** The iptables arguments a rule read back stands for; what has none shows as `nft:<expression>`. */
export function ruleArgs(rule: NftRule, family: Family, sets: NftSet[]): string[] {
  const matches: string[] = [];
  const target: string[] = [];
  const { exprs } = rule;
  for (let i = 0; i < exprs.length; ) {
    const [first, second, third] = [exprs[i]!, exprs[i + 1], exprs[i + 2]];
    const eq = (expr: Expr | undefined): expr is Extract<Expr, { kind: "cmp" }> => expr?.kind === "cmp" && expr.op === CMP_EQ;
    const unknown = `nft:${first.kind === "other" ? first.name : first.kind}`;
    if (target.length > 0) {
      matches.push(unknown);
      i++;
    } else if (first.kind === "meta" && eq(second)) {
      if (first.key === META_L4PROTO && second.data.byteLength === 1)
        matches.push("-p", second.data[0] === IPPROTO_TCP ? "tcp" : String(second.data[0]));
      else if (first.key === META_SKUID) matches.push("-m", "owner", "--uid-owner", String(ownerId(second.data)));
      else if (first.key === META_SKGID) matches.push("-m", "owner", "--gid-owner", String(ownerId(second.data)));
      else if (first.key === META_OIFNAME) matches.push("-o", new TextDecoder().decode(second.data).replace(/\0.*$/s, ""));
      else matches.push(`nft:meta-${first.key}`);
      i += 2;
    } else if (isDport(first) && second?.kind === "lookup") {
      const ports = setPorts(sets.find((set) => set.name === second.set));
      matches.push(...(ports === undefined ? [`nft:set-${second.set}`] : ["-m", "multiport", "--dports", ports]));
      i += 2;
    } else if (isDport(first) && eq(second) && second.data.byteLength === 2) {
      matches.push("-m", "tcp", "--dport", String(readU16be(second.data)));
      i += 2;
    } else if (first.kind === "payload" && first.base === BASE_NETWORK && first.offset === saddrOffset[family]) {
      const masked = second?.kind === "bitwise" ? second : undefined;
      const compare = masked ? third : second;
      if (!eq(compare)) {
        matches.push("nft:payload");
        i++;
        continue;
      }
      const full = family === "ipv4" ? 4 : 16;
      const address = new Uint8Array(full);
      address.set(compare.data.subarray(0, full));
      const prefix = masked ? masked.mask.reduce((bits, byte) => bits + (byte.toString(2).match(/1/g)?.length ?? 0), 0) : first.len * 8;
      matches.push("-s", `${ipaddr.fromByteArray([...address]).toString()}/${prefix}`);
      i += masked ? 3 : 2;
    } else if (first.kind === "verdict") {
      target.push(
        "-j",
        first.code === VERDICT_RETURN ? "RETURN" : first.code === VERDICT_JUMP ? (first.chain ?? "") : `verdict-${first.code}`,
      );
      i++;
    } else if (first.kind === "immediate" && second?.kind === "redir" && second.protoMin === first.dreg && first.data.byteLength === 2) {
      target.push("-j", "REDIRECT", "--to-ports", String(readU16be(first.data)));
      i += 2;
    } else {
      matches.push(unknown);
      i++;
    }
  }
  return [...matches, ...(rule.comment === undefined ? [] : ["-m", "comment", "--comment", rule.comment]), ...target];
}

/**
 * A table read back, in the plan's vocabulary: a nat base chain at prerouting stands for
 * PREROUTING, one at output for OUTPUT (any other base chain keeps an `nft:` name), so a
 * jump from a chain hooked elsewhere is no jump from PREROUTING to the diff.
 */
export function natTableOf(table: NftTable | undefined): NatTable {
  if (!table) return { chains: new Set(), rules: [] };
  const standsFor = new Map(
    table.chains.map((chain) => {
      const { hook } = chain;
      if (!hook) return [chain.name, chain.name];
      const builtin = Object.entries(baseChains).find(
        ([, wanted]) => wanted.num === hook.num && wanted.type === hook.type && wanted.priority === hook.priority,
      );
      return [chain.name, builtin ? builtin[0] : `nft:${chain.name}`];
    }),
  );
  return {
    chains: new Set(standsFor.values()),
    rules: table.rules.map((rule) => {
      const args = ruleArgs(rule, table.family, table.sets);
      return { chain: standsFor.get(rule.chain) ?? rule.chain, args, text: args.join(" ") };
    }),
  };
}
