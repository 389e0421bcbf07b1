import type { Family } from "../redirect/spec.js";
import { decodeExpr, type Expr, encodeExpr } from "./expr/expr.js";
import { type BatchPart, batchPart, bodyOf, msg } from "./message.js";
import { attr, type NetlinkMessage, NLM_F_APPEND, NLM_F_CREATE, nest, parseAttrs, readStrz, strz } from "./netlink.js";

/** A rule's attributes (NFTA_RULE_*). */
const RULE = { table: 1, chain: 2, handle: 3, expressions: 4, userdata: 7 } as const;
/** The comment, as nft stores it in a rule's userdata (NFTNL_UDATA_RULE_COMMENT, a type-length-value list). */
const UDATA_RULE_COMMENT = 0;

export interface NftRule {
  chain: string;
  exprs: Expr[];
  comment: string | undefined;
}

/** Appends the rule to its chain. */
export function newRule(family: Family, table: string, rule: NftRule): BatchPart {
  const attrs = [attr(RULE.table, strz(table)), attr(RULE.chain, strz(rule.chain)), nest(RULE.expressions, rule.exprs.map(encodeExpr))];
  if (rule.comment !== undefined) {
    const text = new TextEncoder().encode(`${rule.comment}\0`);
    attrs.push(attr(RULE.userdata, Uint8Array.from([UDATA_RULE_COMMENT, text.byteLength, ...text])));
  }
  const what = `add rule to ${rule.chain}${rule.comment ? ` (${rule.comment})` : ""}`;
  return batchPart(what, msg.newRule, NLM_F_CREATE | NLM_F_APPEND, family, RULE, attrs);
}

/** The comment in a rule's userdata. */
function decodeComment(userdata: Uint8Array | undefined): string | undefined {
  for (let at = 0; userdata && at + 2 <= userdata.byteLength; at += 2 + userdata[at + 1]!) {
    if (userdata[at] === UDATA_RULE_COMMENT) return readStrz(userdata.subarray(at + 2, at + 2 + userdata[at + 1]!));
  }
  return undefined;
}

/**
 * Deletes one rule of a chain by its handle (as a dump gave it: 8 bytes, big-endian), or
 * with no handle every rule of the chain (nft's `flush chain`).
 */
export function deleteRules(family: Family, table: string, chain: string, handle?: Uint8Array): BatchPart {
  const attrs = [attr(RULE.table, strz(table)), attr(RULE.chain, strz(chain)), ...(handle ? [attr(RULE.handle, handle)] : [])];
  return batchPart(handle ? `delete a rule of ${chain}` : `flush chain ${chain}`, msg.delRule, 0, family, RULE, attrs);
}

/** A rule from a dump, with the table it is in and its handle. */
export function decodeRule(message: NetlinkMessage): { table: string | undefined; handle: Uint8Array | undefined; rule: NftRule } {
  const body = bodyOf(message);
  return {
    table: readStrz(body.get(RULE.table)),
    handle: body.get(RULE.handle),
    rule: {
      chain: readStrz(body.get(RULE.chain)) ?? "",
      exprs: parseAttrs(body.get(RULE.expressions) ?? new Uint8Array()).map((element) => decodeExpr(element.value)),
      comment: decodeComment(body.get(RULE.userdata)),
    },
  };
}
