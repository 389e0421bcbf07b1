import ipaddr from "ipaddr.js";
import type { RulePlan } from "../redirect/plan.js";
import type { Family } from "../redirect/spec.js";
import type { NftChain } from "./chain.js";
import { CMP_EQ } from "./expr/cmp.js";
import { REG_1 } from "./expr/common.js";
import type { Expr } from "./expr/expr.js";
import { VERDICT_JUMP, VERDICT_RETURN } from "./expr/immediate.js";
import { META_L4PROTO, META_OIFNAME, META_SKGID, META_SKUID } from "./expr/meta.js";
import { BASE_NETWORK, BASE_TRANSPORT } from "./expr/payload.js";
import { NAT_RANGE_PROTO_SPECIFIED } from "./expr/redir.js";
import { u16be, u32host } from "./netlink.js";
import type { NftRule } from "./rule.js";
import { baseChains, IPPROTO_TCP, MAX_PORT, type NftTable, portRanges, saddrOffset, tableName } from "./ruleset.js";
import type { NftSet, SetElement } from "./set.js";

/**
 * A plan (iptables' vocabulary, which the records and the diff speak) as nf_tables
 * objects, pure: only what planRules writes is translated, as nft 1.0.6 would write it.
 */

const ifname = (name: string) => {
  const bytes = new Uint8Array(16);
  bytes.set(new TextEncoder().encode(name).subarray(0, 15));
  return bytes;
};

const tcpDport: Expr = { kind: "payload", dreg: REG_1, base: BASE_TRANSPORT, offset: 2, len: 2 };
const equals = (data: Uint8Array): Expr => ({ kind: "cmp", sreg: REG_1, op: CMP_EQ, data });
const metaIs = (key: number, data: Uint8Array): Expr[] => [{ kind: "meta", key, dreg: REG_1 }, equals(data)];

/**
 * An anonymous set of ports as nft writes it: intervals (merged, led by an end at 0) only
 * when the list has a range; an interval up to 65535 is left open (65536 has no key).
 */
function portSet(list: string, id: number): NftSet {
  const ranges = portRanges(list);
  const interval = list.includes(":");
  // Single ports keep the plan's order, as nft sends them; a hash set does not keep it anyway.
  if (!interval)
    return { name: "__set%d", id, interval, elements: [...new Set(list.split(",").map(Number))].map((key) => ({ key, end: false })) };
  const elements = ranges.flatMap(([from, to]): SetElement[] =>
    to === MAX_PORT
      ? [{ key: from, end: false, open: true }]
      : [
          { key: from, end: false },
          { key: to + 1, end: true },
        ],
  );
  // nft closes the gap below the first interval with an end element at 0.
  return { name: "__set%d", id, interval, elements: ranges[0]![0] > 0 ? [{ key: 0, end: true }, ...elements] : elements };
}

/** `-s CIDR` as nft writes it: a whole-byte prefix loads only those bytes; another is masked. */
function sourceExprs(cidr: string, family: Family): Expr[] {
  const [address, prefixText] = cidr.split("/");
  const prefix = Number(prefixText);
  const bytes = Uint8Array.from(ipaddr.parse(address!).toByteArray());
  const offset = saddrOffset[family];
  if (prefix > 0 && prefix % 8 === 0) {
    const len = prefix / 8;
    return [{ kind: "payload", dreg: REG_1, base: BASE_NETWORK, offset, len }, equals(bytes.subarray(0, len))];
  }
  const mask = bytes.map((_, i) => (0xff << (8 - Math.min(8, Math.max(0, prefix - i * 8)))) & 0xff);
  return [
    { kind: "payload", dreg: REG_1, base: BASE_NETWORK, offset, len: bytes.length },
    { kind: "bitwise", sreg: REG_1, dreg: REG_1, len: bytes.length, mask, xor: new Uint8Array(bytes.length) },
    equals(bytes),
  ];
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
      exprs.push(...metaIs(META_L4PROTO, new Uint8Array([IPPROTO_TCP])));
      i += 2;
    } else if (take(["-m", "multiport", "--dports"], i)) {
      const set = portSet(args[i + 3]!, nextSetId());
      sets.push(set);
      exprs.push(tcpDport, { kind: "lookup", sreg: REG_1, set: set.name, setId: set.id });
      i += 4;
    } else if (take(["-m", "tcp", "--dport"], i)) {
      exprs.push(tcpDport, equals(u16be(Number(args[i + 3]))));
      i += 4;
    } else if (take(["-s"], i)) {
      exprs.push(...sourceExprs(args[i + 1]!, family));
      i += 2;
    } else if (take(["-m", "owner", "--uid-owner"], i) || take(["-m", "owner", "--gid-owner"], i)) {
      exprs.push(...metaIs(args[i + 2] === "--uid-owner" ? META_SKUID : META_SKGID, u32host(Number(args[i + 3]))));
      i += 4;
    } else if (take(["-o"], i)) {
      exprs.push(...metaIs(META_OIFNAME, ifname(args[i + 1]!)));
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
