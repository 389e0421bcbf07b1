import { type Attr, attr, u32be } from "../netlink.js";
import { dataValue, type ExprAttrs, readDataValue, u32Of } from "./common.js";

/** Masks a register: (sreg & mask) ^ xor into dreg (NFTA_BITWISE_*). */
const BITWISE = { sreg: 1, dreg: 2, len: 3, mask: 4, xor: 5 } as const;

export interface Bitwise {
  kind: "bitwise";
  sreg: number;
  dreg: number;
  len: number;
  mask: Uint8Array;
  xor: Uint8Array;
}

export const encodeBitwise = (expr: Bitwise): Attr[] => [
  attr(BITWISE.sreg, u32be(expr.sreg)),
  attr(BITWISE.dreg, u32be(expr.dreg)),
  attr(BITWISE.len, u32be(expr.len)),
  dataValue(BITWISE.mask, expr.mask),
  dataValue(BITWISE.xor, expr.xor),
];

export const decodeBitwise = (attrs: ExprAttrs): Bitwise => ({
  kind: "bitwise",
  sreg: u32Of(attrs, BITWISE.sreg),
  dreg: u32Of(attrs, BITWISE.dreg),
  len: u32Of(attrs, BITWISE.len),
  mask: readDataValue(attrs.get(BITWISE.mask)),
  xor: readDataValue(attrs.get(BITWISE.xor)),
});
