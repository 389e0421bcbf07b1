import { type Attr, attr, u32be } from "../netlink.js";
import { dataValue, type ExprAttrs, readDataValue, u32Of } from "./common.js";

/** Compares a register with data (NFTA_CMP_*). */
const CMP = { sreg: 1, op: 2, data: 3 } as const;

/** NFT_CMP_EQ: the only comparison meshcni makes. */
export const CMP_EQ = 0;

export interface Cmp {
  kind: "cmp";
  sreg: number;
  op: number;
  data: Uint8Array;
}

export const encodeCmp = (expr: Cmp): Attr[] => [
  attr(CMP.sreg, u32be(expr.sreg)),
  attr(CMP.op, u32be(expr.op)),
  dataValue(CMP.data, expr.data),
];

export const decodeCmp = (attrs: ExprAttrs): Cmp => ({
  kind: "cmp",
  sreg: u32Of(attrs, CMP.sreg),
  op: u32Of(attrs, CMP.op),
  data: readDataValue(attrs.get(CMP.data)),
});
