import type { Family } from "../redirect/spec.js";
import { dataValue, readDataValue } from "./expr/common.js";
import { type BatchPart, batchPart, bodyOf, dumpRequest, msg } from "./message.js";
import {
  attr,
  attrMap,
  type NetlinkMessage,
  NLM_F_CREATE,
  nest,
  parseAttrs,
  readStrz,
  readU16be,
  readU32be,
  strz,
  u16be,
  u32be,
} from "./netlink.js";

/** A set's attributes (NFTA_SET_*), its description's (NFTA_SET_DESC_*), its elements' (NFTA_SET_ELEM_LIST_*, NFTA_SET_ELEM_*). */
const SET = { table: 1, name: 2, flags: 3, keyType: 4, keyLength: 5, desc: 9, id: 10, userdata: 13 } as const;
const SET_DESC = { size: 1 } as const;
const SET_ELEM_LIST = { table: 1, set: 2, elements: 3, setId: 4 } as const;
const SET_ELEM = { key: 1, flags: 3, userdata: 6 } as const;
const SET_ANONYMOUS = 0x1;
const SET_CONSTANT = 0x2;
const SET_INTERVAL = 0x4;
const SET_ELEM_INTERVAL_END = 0x1;
/** nft's element userdata for an interval open at the top (NFTNL_UDATA_SET_ELEM_FLAGS = NFTNL_SET_ELEM_F_INTERVAL_OPEN). */
const intervalOpenUserdata = Uint8Array.from([0x01, 0x04, 0x01, 0x00, 0x00, 0x00]);
/** nft's datatype for TCP/UDP ports (inet_service). */
const TYPE_INET_SERVICE = 13;

/**
 * nft's userdata for a set typed `tcp dport` (key byte order big-endian, the expression it
 * came from; and for intervals, "merge elements"), so `nft list ruleset` prints the set as
 * nft would have written it.
 */
const setUserdata = {
  byteOrder: [0x00, 0x04, 0x02, 0x00, 0x00, 0x00],
  merge: [0x02, 0x04, 0x01, 0x00, 0x00, 0x00],
  typeofTcpDport: [
    0x03, 0x14, 0x00, 0x04, 0x07, 0x00, 0x00, 0x00, 0x01, 0x0c, 0x00, 0x04, 0x08, 0x00, 0x00, 0x00, 0x01, 0x04, 0x02, 0x00, 0x00, 0x00,
  ],
};

/**
 * An anonymous set of TCP ports: single ports, or intervals (start, then end + 1 flagged
 * as an end). An interval reaching 65535 has no end + 1: its start is `open` and the
 * set's size counts the end it lacks, as nft sends it.
 */
export interface NftSet {
  name: string;
  id: number;
  interval: boolean;
  elements: SetElement[];
}

export interface SetElement {
  key: number;
  end: boolean;
  open?: true;
}

const elementAttrs = (element: SetElement) => [
  ...(element.end ? [attr(SET_ELEM.flags, u32be(SET_ELEM_INTERVAL_END))] : []),
  dataValue(SET_ELEM.key, u16be(element.key)),
  ...(element.open ? [attr(SET_ELEM.userdata, intervalOpenUserdata)] : []),
];

/** The set and, in a second message, its elements (both in the batch of the rule that looks it up). */
export function newSet(family: Family, table: string, set: NftSet): BatchPart[] {
  const flags = SET_ANONYMOUS | SET_CONSTANT | (set.interval ? SET_INTERVAL : 0);
  const userdata = [...setUserdata.byteOrder, ...(set.interval ? setUserdata.merge : []), ...setUserdata.typeofTcpDport];
  return [
    batchPart(`add set ${set.name} (id ${set.id})`, msg.newSet, NLM_F_CREATE, family, SET, [
      attr(SET.table, strz(table)),
      attr(SET.name, strz(set.name)),
      attr(SET.flags, u32be(flags)),
      attr(SET.keyType, u32be(TYPE_INET_SERVICE)),
      attr(SET.keyLength, u32be(2)),
      attr(SET.id, u32be(set.id)),
      nest(SET.desc, [attr(SET_DESC.size, u32be(set.elements.length + (set.elements.at(-1)?.open ? 1 : 0)))]),
      attr(SET.userdata, Uint8Array.from(userdata)),
    ]),
    batchPart(`add elements to set ${set.name} (id ${set.id})`, msg.newSetElem, NLM_F_CREATE, family, SET_ELEM_LIST, [
      attr(SET_ELEM_LIST.table, strz(table)),
      attr(SET_ELEM_LIST.set, strz(set.name)),
      attr(SET_ELEM_LIST.setId, u32be(set.id)),
      // Like libnftnl, each element's attribute type is its position.
      nest(
        SET_ELEM_LIST.elements,
        set.elements.map((element, index) => nest(index + 1, elementAttrs(element))),
      ),
    ]),
  ];
}

/** A set from a dump, without its elements (a dump of their own), and the table it is in. */
export function decodeSet(message: NetlinkMessage): { table: string | undefined; set: Omit<NftSet, "elements"> } {
  const body = bodyOf(message);
  return {
    table: readStrz(body.get(SET.table)),
    set: {
      name: readStrz(body.get(SET.name)) ?? "",
      id: readU32be(body.get(SET.id)) ?? 0,
      interval: ((readU32be(body.get(SET.flags)) ?? 0) & SET_INTERVAL) !== 0,
    },
  };
}

/** The elements in a reply to setElementsRequest. */
export function decodeElements(message: NetlinkMessage): NftSet["elements"] {
  return parseAttrs(bodyOf(message).get(SET_ELEM_LIST.elements) ?? new Uint8Array()).map((nested) => {
    const fields = attrMap(nested.value);
    const element: SetElement = {
      key: readU16be(readDataValue(fields.get(SET_ELEM.key))),
      end: ((readU32be(fields.get(SET_ELEM.flags)) ?? 0) & SET_ELEM_INTERVAL_END) !== 0,
    };
    const userdata = fields.get(SET_ELEM.userdata);
    return userdata && Buffer.from(userdata).equals(intervalOpenUserdata) ? { ...element, open: true } : element;
  });
}

/** The names of a table's sets (anonymous ones as the kernel named them), from a set dump. */
export function setNames(sets: NetlinkMessage[], table: string): string[] {
  return sets.flatMap((message) => {
    const { table: of, set } = decodeSet(message);
    return of === table ? [set.name] : [];
  });
}

/** Asks for a set's elements. */
export const setElementsRequest = (family: Family, table: string, set: string) =>
  dumpRequest(msg.getSetElem, family, [attr(SET_ELEM_LIST.table, strz(table)), attr(SET_ELEM_LIST.set, strz(set))]);
