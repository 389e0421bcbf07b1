import { type Attr, attr, readStrz, readU32be, strz, u32be } from "../netlink.js";
import { type ExprAttrs, u32Of } from "./common.js";

/** Matches when a register's value is in a set (NFTA_LOOKUP_*): by name, or by id within the batch that makes the set. */
const LOOKUP = { set: 1, sreg: 2, setId: 4 } as const;

export interface Lookup {
  kind: "lookup";
  sreg: number;
  set: string;
  setId: number | undefined;
}

export const encodeLookup = (expr: Lookup): Attr[] => [
  attr(LOOKUP.sreg, u32be(expr.sreg)),
  attr(LOOKUP.set, strz(expr.set)),
  ...(expr.setId === undefined ? [] : [attr(LOOKUP.setId, u32be(expr.setId))]),
];

export const decodeLookup = (attrs: ExprAttrs): Lookup => ({
  kind: "lookup",
  sreg: u32Of(attrs, LOOKUP.sreg),
  set: readStrz(attrs.get(LOOKUP.set)) ?? "",
  setId: readU32be(attrs.get(LOOKUP.setId)),
});
