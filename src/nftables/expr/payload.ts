import { type Attr, attr, u32be } from "../netlink.js";
import { type ExprAttrs, type Other, u32Of } from "./common.js";

/** Loads bytes of a packet header into a register (NFTA_PAYLOAD_*). */
const PAYLOAD = { dreg: 1, base: 2, offset: 3, len: 4 } as const;

/** Which header the offset counts from (NFT_PAYLOAD_*_HEADER). */
export const BASE_NETWORK = 1;
export const BASE_TRANSPORT = 2;

export interface Payload {
  kind: "payload";
  dreg: number;
  base: number;
  offset: number;
  len: number;
}

export const encodePayload = (expr: Payload): Attr[] => [
  attr(PAYLOAD.dreg, u32be(expr.dreg)),
  attr(PAYLOAD.base, u32be(expr.base)),
  attr(PAYLOAD.offset, u32be(expr.offset)),
  attr(PAYLOAD.len, u32be(expr.len)),
];

/** Without a destination register it writes the packet (payload set): nothing meshcni writes. */
export const decodePayload = (attrs: ExprAttrs): Payload | Other =>
  attrs.has(PAYLOAD.dreg)
    ? {
        kind: "payload",
        dreg: u32Of(attrs, PAYLOAD.dreg),
        base: u32Of(attrs, PAYLOAD.base),
        offset: u32Of(attrs, PAYLOAD.offset),
        len: u32Of(attrs, PAYLOAD.len),
      }
    : { kind: "other", name: "payload-set" };
