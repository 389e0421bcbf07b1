import { type Attr, attr, u32be } from "../netlink.js";
import { dataValue, type ExprAttrs, REG_VERDICT, readDataValue, readVerdict, u32Of, verdictData } from "./common.js";

/** Loads a constant into a register (NFTA_IMMEDIATE_*): data, or into the verdict register, a verdict. */
const IMMEDIATE = { dreg: 1, data: 2 } as const;

/** Verdict codes meshcni writes (NFT_RETURN, NFT_JUMP). */
export const VERDICT_RETURN = -5;
export const VERDICT_JUMP = -3;

export interface Immediate {
  kind: "immediate";
  dreg: number;
  data: Uint8Array;
}

/** An immediate into the verdict register: return, or a jump to a chain. */
export interface Verdict {
  kind: "verdict";
  code: number;
  chain: string | undefined;
}

export const encodeImmediate = (expr: Immediate): Attr[] => [attr(IMMEDIATE.dreg, u32be(expr.dreg)), dataValue(IMMEDIATE.data, expr.data)];

export const encodeVerdict = (expr: Verdict): Attr[] => [
  attr(IMMEDIATE.dreg, u32be(REG_VERDICT)),
  verdictData(IMMEDIATE.data, expr.code, expr.chain),
];

export function decodeImmediate(attrs: ExprAttrs): Immediate | Verdict {
  const dreg = u32Of(attrs, IMMEDIATE.dreg);
  const verdict = dreg === REG_VERDICT ? readVerdict(attrs.get(IMMEDIATE.data)) : undefined;
  return verdict ? { kind: "verdict", ...verdict } : { kind: "immediate", dreg, data: readDataValue(attrs.get(IMMEDIATE.data)) };
}
