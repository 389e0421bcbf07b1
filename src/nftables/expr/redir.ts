import { type Attr, attr, readU32be, u32be } from "../netlink.js";
import { type ExprAttrs, u32Of } from "./common.js";

/** Redirects to a local port held in a register (NFTA_REDIR_*). */
const REDIR = { regProtoMin: 1, flags: 3 } as const;

/** NF_NAT_RANGE_PROTO_SPECIFIED: the redirect names a port. */
export const NAT_RANGE_PROTO_SPECIFIED = 2;

export interface Redir {
  kind: "redir";
  protoMin: number;
  flags: number;
}

export const encodeRedir = (expr: Redir): Attr[] => [attr(REDIR.regProtoMin, u32be(expr.protoMin)), attr(REDIR.flags, u32be(expr.flags))];

export const decodeRedir = (attrs: ExprAttrs): Redir => ({
  kind: "redir",
  protoMin: u32Of(attrs, REDIR.regProtoMin),
  flags: readU32be(attrs.get(REDIR.flags)) ?? 0,
});
