import { type Attr, attr, u32be } from "../netlink.js";
import { type ExprAttrs, type Other, u32Of } from "./common.js";

/** Loads packet or socket metadata into a register (NFTA_META_*). */
const META = { dreg: 1, key: 2 } as const;

/** The keys meshcni matches (NFT_META_*). */
export const META_OIFNAME = 7;
export const META_SKUID = 10;
export const META_SKGID = 11;
export const META_L4PROTO = 16;

export interface Meta {
  kind: "meta";
  key: number;
  dreg: number;
}

export const encodeMeta = (expr: Meta): Attr[] => [attr(META.key, u32be(expr.key)), attr(META.dreg, u32be(expr.dreg))];

/** Without a destination register it sets metadata (meta set): nothing meshcni writes. */
export const decodeMeta = (attrs: ExprAttrs): Meta | Other =>
  attrs.has(META.dreg) ? { kind: "meta", key: u32Of(attrs, META.key), dreg: u32Of(attrs, META.dreg) } : { kind: "other", name: "meta-set" };
