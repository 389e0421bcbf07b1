import { type Attr, attr, attrMap, nest, readStrz, strz } from "../netlink.js";
import { type Bitwise, decodeBitwise, encodeBitwise } from "./bitwise.js";
import { type Cmp, decodeCmp, encodeCmp } from "./cmp.js";
import type { ExprAttrs, Other } from "./common.js";
import { decodeImmediate, encodeImmediate, encodeVerdict, type Immediate, type Verdict } from "./immediate.js";
import { decodeLookup, encodeLookup, type Lookup } from "./lookup.js";
import { decodeMeta, encodeMeta, type Meta } from "./meta.js";
import { decodePayload, encodePayload, type Payload } from "./payload.js";
import { decodeRedir, encodeRedir, type Redir } from "./redir.js";
import { decodeTarget } from "./target.js";

/** The expressions of meshcni's rules, one file each with its encoding and decoding side by side. */
export type Expr = Meta | Cmp | Payload | Bitwise | Lookup | Verdict | Immediate | Redir | Other;

/** An expression in a rule's list (NFTA_LIST_ELEM): its kernel name and its data (NFTA_EXPR_*). */
const LIST_ELEM = 1;
const EXPR = { name: 1, data: 2 } as const;

/** The kernel's name of an expression and its attributes. */
function encoded(expr: Expr): [string, Attr[]] {
  switch (expr.kind) {
    case "meta":
      return ["meta", encodeMeta(expr)];
    case "cmp":
      return ["cmp", encodeCmp(expr)];
    case "payload":
      return ["payload", encodePayload(expr)];
    case "bitwise":
      return ["bitwise", encodeBitwise(expr)];
    case "lookup":
      return ["lookup", encodeLookup(expr)];
    case "verdict":
      return ["immediate", encodeVerdict(expr)];
    case "immediate":
      return ["immediate", encodeImmediate(expr)];
    case "redir":
      return ["redir", encodeRedir(expr)];
    case "other":
      throw new Error(`cannot write nftables expression ${expr.name}`);
  }
}

export function encodeExpr(expr: Expr): Attr {
  const [name, attrs] = encoded(expr);
  return nest(LIST_ELEM, [attr(EXPR.name, strz(name)), nest(EXPR.data, attrs)]);
}

const decoders: Record<string, (attrs: ExprAttrs) => Expr> = {
  meta: decodeMeta,
  cmp: decodeCmp,
  payload: decodePayload,
  bitwise: decodeBitwise,
  lookup: decodeLookup,
  immediate: decodeImmediate,
  redir: decodeRedir,
  target: decodeTarget,
  notrack: () => ({ kind: "other", name: "notrack", untracks: true }),
};

/** One expression read back; kinds meshcni does not write come back as "other". */
export function decodeExpr(element: Uint8Array): Expr {
  const top = attrMap(element);
  const name = readStrz(top.get(EXPR.name)) ?? "?";
  const decode = decoders[name];
  return decode ? decode(attrMap(top.get(EXPR.data) ?? new Uint8Array())) : { kind: "other", name };
}
