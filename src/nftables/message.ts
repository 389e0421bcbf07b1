import type { Family } from "../redirect/spec.js";
import { type Attr, attrMap, encodeMessage, type NetlinkMessage, NFNL_SUBSYS_NFTABLES, NLM_F_DUMP, NLM_F_REQUEST } from "./netlink.js";

/** nf_tables message types (NFT_MSG_*), from linux/netfilter/nf_tables.h. */
export const msg = {
  newTable: 0,
  getTable: 1,
  delTable: 2,
  newChain: 3,
  getChain: 4,
  delChain: 5,
  newRule: 6,
  getRule: 7,
  delRule: 8,
  newSet: 9,
  getSet: 10,
  newSetElem: 12,
  getSetElem: 13,
  getGen: 16,
} as const;

/** nfgenmsg's family of each address family's tables (NFPROTO_IPV4, NFPROTO_IPV6), and of inet tables, which see both. */
const nfproto = { ipv4: 2, ipv6: 10, inet: 1 } as const;

/** Tables a dump can list: one address family's, or inet's (meshcni reads those, never writes them). */
export type DumpFamily = Family | "inet";

/** What `nft` calls a family's tables. */
export const familyWord = (family: Family) => (family === "ipv4" ? "ip" : "ip6");

/** An object's attribute numbers by name (NFTA_*): read and written by name, never by bare number. */
export type AttributeTable = Readonly<Record<string, number>>;

/** One message of a batch: made once its sequence number is known; what it is and its attributes' names, for the kernel's errors. */
export interface BatchPart {
  what: string;
  make(seq: number): Uint8Array;
  /** The names of its top-level attributes, by number ("key type" for keyType). */
  attributes: Record<number, string>;
}

const words = (name: string) => name.replace(/[A-Z]/g, (letter) => ` ${letter.toLowerCase()}`);

/** A request of a batch: an nf_tables message of one family, its attributes named from `table`. */
export function batchPart(what: string, type: number, flags: number, family: Family, table: AttributeTable, attrs: Attr[]): BatchPart {
  return {
    what,
    make: (seq) =>
      encodeMessage({ type: (NFNL_SUBSYS_NFTABLES << 8) | type, flags: NLM_F_REQUEST | flags, seq, family: nfproto[family], attrs }),
    attributes: Object.fromEntries(Object.entries(table).map(([name, number]) => [number, words(name)])),
  };
}

/** A dump request (tables, chains, sets, rules) for one family, or a set's elements. */
export function dumpRequest(type: number, family: DumpFamily, attrs: Attr[] = []): (seq: number) => Uint8Array {
  return (seq) =>
    encodeMessage({ type: (NFNL_SUBSYS_NFTABLES << 8) | type, flags: NLM_F_REQUEST | NLM_F_DUMP, seq, family: nfproto[family], attrs });
}

/** The attributes of a message the kernel sent: after nfgenmsg's 4 bytes. */
export const bodyOf = (message: NetlinkMessage) => attrMap(message.payload.subarray(4));
