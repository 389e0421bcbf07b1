import ipaddr from "ipaddr.js";
import type { RulePlan } from "../redirect/plan.js";
import type { Family } from "../redirect/spec.js";
import { emptyTable, type NatTable } from "../redirect/table.js";
import type { Bitwise } from "./expr/bitwise.js";
import { CMP_EQ, type Cmp } from "./expr/cmp.js";
import type { Expr } from "./expr/expr.js";
import { VERDICT_JUMP, VERDICT_RETURN } from "./expr/immediate.js";
import { META_L4PROTO, META_OIFNAME, META_SKGID, META_SKUID } from "./expr/meta.js";
import { BASE_NETWORK, BASE_TRANSPORT, type Payload } from "./expr/payload.js";
import { readU16be, readU32host } from "./netlink.js";
import type { NftRule } from "./rule.js";
import { baseChains, IPPROTO_TCP, MAX_PORT, type NftTable, portRanges, saddrOffset } from "./ruleset.js";
import type { NftSet } from "./set.js";

/**
 * A table read back, in the plan's vocabulary, pure: CHECK and the audit diff it with the
 * same messages as iptables'. Anything planRules does not write shows as an `nft:`
 * token, which the diff reports.
 */

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

/** A UID or GID compared in a rule: 4 bytes, host order (-1, which no plan holds, for anything else). */
const ownerId = (bytes: Uint8Array) => (bytes.byteLength === 4 ? readU32host(bytes)! : -1);

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
  // A start with no end after it is open: it runs to the last port.
  if (start !== undefined) ranges.push([start, MAX_PORT]);
  return ranges.length > 0 ? renderRanges(portRanges(renderRanges(ranges))) : undefined;
}

/** A load of the TCP destination port. */
const isDport = (expr: Expr) => expr.kind === "payload" && expr.base === BASE_TRANSPORT && expr.offset === 2 && expr.len === 2;
const isEqual = (expr: Expr | undefined): expr is Cmp => expr?.kind === "cmp" && expr.op === CMP_EQ;

/** The source address a payload (masked or not) and comparison match, as `-s` takes it. */
function sourceCidr(load: Payload, masked: Bitwise | undefined, compare: Cmp, family: Family): string {
  const address = new Uint8Array(family === "ipv4" ? 4 : 16);
  address.set(compare.data.subarray(0, address.length));
  const prefix = masked ? masked.mask.reduce((bits, byte) => bits + (byte.toString(2).match(/1/g)?.length ?? 0), 0) : load.len * 8;
  return `${ipaddr.fromByteArray([...address]).toString()}/${prefix}`;
}

/** The iptables arguments a rule read back stands for; what has none shows as `nft:<expression>`. */
export function ruleArgs(rule: NftRule, family: Family, sets: NftSet[]): string[] {
  const matches: string[] = [];
  const target: string[] = [];
  const { exprs } = rule;
  for (let i = 0; i < exprs.length; ) {
    const [first, second, third] = [exprs[i]!, exprs[i + 1], exprs[i + 2]];
    const unknown = `nft:${first.kind === "other" ? first.name : first.kind}`;
    if (target.length > 0) {
      matches.push(unknown);
      i++;
    } else if (first.kind === "meta" && isEqual(second)) {
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
    } else if (isDport(first) && isEqual(second) && second.data.byteLength === 2) {
      matches.push("-m", "tcp", "--dport", String(readU16be(second.data)));
      i += 2;
    } else if (first.kind === "payload" && first.base === BASE_NETWORK && first.offset === saddrOffset[family]) {
      const masked = second?.kind === "bitwise" ? second : undefined;
      const compare = masked ? third : second;
      if (!isEqual(compare)) {
        matches.push("nft:payload");
        i++;
        continue;
      }
      matches.push("-s", sourceCidr(first, masked, compare, family));
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
 * A table read back as the plan's NatTable: a nat base chain at prerouting stands for
 * PREROUTING, one at output for OUTPUT (any other base chain keeps an `nft:` name), so a
 * jump from a chain hooked elsewhere is no jump from PREROUTING to the diff.
 */
export function natTableOf(table: NftTable | undefined): NatTable {
  if (!table) return emptyTable(true);
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
    ownTable: true,
    natBefore: [],
  };
}
