import { readStrz, readU16host } from "../netlink.js";
import type { ExprAttrs, Other } from "./common.js";

/** An xtables target as iptables-nft writes one it has no native expression for (NFTA_TARGET_*). */
const TARGET = { name: 1, info: 3 } as const;
/** xt_ct_target_info's flags (its first field, host order): the connection is left untracked. */
const XT_CT_NOTRACK = 1;

/**
 * A target read back, which meshcni never writes: `nft:target-<name>`, and whether it
 * leaves the packet untracked (`-j NOTRACK`, or `-j CT --notrack`, which iptables-nft keeps
 * as the CT target with its notrack flag). Untracked, a connection never reaches NAT.
 */
export function decodeTarget(attrs: ExprAttrs): Other {
  const name = readStrz(attrs.get(TARGET.name)) ?? "?";
  const flags = readU16host(attrs.get(TARGET.info)) ?? 0;
  const untracks = name === "NOTRACK" || (name === "CT" && (flags & XT_CT_NOTRACK) !== 0);
  return { kind: "other", name: `target-${name}`, ...(untracks ? { untracks } : {}) };
}
