import { attr, attrMap, nest, readI32be, readStrz, readU32be, strz, u32be } from "../netlink.js";

/**
 * What every expression shares: registers, data values and verdicts (NFTA_DATA_*,
 * NFTA_VERDICT_*, from linux/netfilter/nf_tables.h), and the "other" kind for what
 * meshcni reads back but never writes.
 */

/** The verdict register: an immediate loading it ends the rule with a verdict. */
export const REG_VERDICT = 0;
/** The first data register, where meshcni's matches load what they compare. */
export const REG_1 = 1;

/** An expression's attributes, by number. */
export type ExprAttrs = Map<number, Uint8Array>;

/** An expression meshcni does not write, read back: shown as `nft:<name>` and reported by the diff. */
export interface Other {
  kind: "other";
  name: string;
  /** The packet leaves conntrack's sight here (`notrack`, or an xtables target that does so): NAT never sees it. */
  untracks?: true;
}

const DATA = { value: 1, verdict: 2 } as const;
const VERDICT = { code: 1, chain: 2 } as const;

/** A 32-bit attribute, -1 when it is missing (no value meshcni writes). */
export const u32Of = (attrs: ExprAttrs, type: number) => readU32be(attrs.get(type)) ?? -1;

/** NFTA_DATA_VALUE nested in `type`. */
export const dataValue = (type: number, bytes: Uint8Array) => nest(type, [attr(DATA.value, bytes)]);

/** The value in a nested NFTA_DATA (empty when there is none). */
export const readDataValue = (value: Uint8Array | undefined): Uint8Array => (value && attrMap(value).get(DATA.value)) ?? new Uint8Array();

/** NFTA_DATA_VERDICT nested in `type`: a verdict code and, for a jump, its chain. */
export const verdictData = (type: number, code: number, chain: string | undefined) =>
  nest(type, [nest(DATA.verdict, [attr(VERDICT.code, u32be(code)), ...(chain === undefined ? [] : [attr(VERDICT.chain, strz(chain))])])]);

/** The verdict in a nested NFTA_DATA, when it holds one. */
export function readVerdict(value: Uint8Array | undefined): { code: number; chain: string | undefined } | undefined {
  const verdict = value && attrMap(value).get(DATA.verdict);
  if (!verdict) return undefined;
  const fields = attrMap(verdict);
  return { code: readI32be(fields.get(VERDICT.code)) ?? 0, chain: readStrz(fields.get(VERDICT.chain)) };
}
