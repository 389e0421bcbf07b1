import type { Family } from "../redirect/spec.js";
import {
  type Attr,
  attr,
  attrMap,
  encodeMessage,
  msg,
  type NetlinkMessage,
  NLM_F_APPEND,
  NLM_F_CREATE,
  NLM_F_DUMP,
  NLM_F_EXCL,
  NLM_F_REQUEST,
  nest,
  nftType,
  parseAttrs,
  readI32be,
  readStrz,
  readU16be,
  readU32be,
  strz,
  u16be,
  u32be,
} from "./netlink.js";
import { type Expr, type NftChain, type NftRule, type NftSet, type NftTable, nfproto } from "./ruleset.js";

/**
 * nf_tables objects as netlink messages and back, pure. Attributes are written in the
 * order Debian's nft 1.0.6 writes them, so the bytes match its (test/unit/nftables/
 * golden.json); reading accepts any order and the attributes the kernel adds in dumps.
 */

/** One message of a batch: made once its sequence number is known, and what it is, for error messages. */
export interface BatchPart {
  what: string;
  make(seq: number): Uint8Array;
}

const family = (of: Family) => nfproto[of];

// Attribute numbers from linux/netfilter/nf_tables.h.
const TABLE = { name: 1, flags: 2 };
const CHAIN = { table: 1, name: 3, hook: 4, policy: 5, type: 7 };
const HOOK = { num: 1, priority: 2 };
const RULE = { table: 1, chain: 2, expressions: 4, userdata: 7 };
const LIST_ELEM = 1;
const EXPR = { name: 1, data: 2 };
const DATA = { value: 1, verdict: 2 };
const VERDICT = { code: 1, chain: 2 };
const SET = { table: 1, name: 2, flags: 3, keyType: 4, keyLen: 5, desc: 9, id: 10, userdata: 13 };
const SET_DESC_SIZE = 1;
const SET_ELEM_LIST = { table: 1, set: 2, elements: 3, setId: 4 };
const SET_ELEM = { key: 1, flags: 3 };
const SET_ANONYMOUS = 0x1;
const SET_CONSTANT = 0x2;
const SET_INTERVAL = 0x4;
const SET_ELEM_INTERVAL_END = 0x1;
/** nft's datatype for TCP/UDP ports (inet_service). */
const TYPE_INET_SERVICE = 13;
/** The comment, as nft stores it in a rule's userdata (NFTNL_UDATA_RULE_COMMENT). */
const UDATA_RULE_COMMENT = 0;

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

const message = (type: number, flags: number, of: Family, attrs: Attr[]) => (seq: number) =>
  encodeMessage({ type: nftType(type), flags: NLM_F_REQUEST | flags, seq, family: family(of), attrs });

/** Creates the table; `exclusive` fails the batch with EEXIST when it is there already. */
export function newTable(of: Family, name: string, exclusive: boolean): BatchPart {
  return {
    what: `add table ${of === "ipv4" ? "ip" : "ip6"} ${name}`,
    make: message(msg.newTable, exclusive ? NLM_F_CREATE | NLM_F_EXCL : 0, of, [attr(TABLE.name, strz(name)), attr(TABLE.flags, u32be(0))]),
  };
}

export function deleteTable(of: Family, name: string): BatchPart {
  return {
    what: `delete table ${of === "ipv4" ? "ip" : "ip6"} ${name}`,
    make: message(msg.delTable, 0, of, [attr(TABLE.name, strz(name))]),
  };
}

function newChain(of: Family, table: string, chain: NftChain): BatchPart {
  const { hook } = chain;
  const attrs = [attr(CHAIN.table, strz(table)), attr(CHAIN.name, strz(chain.name))];
  if (hook)
    attrs.push(
      attr(CHAIN.type, strz(hook.type)),
      attr(CHAIN.policy, u32be(hook.policy)),
      nest(CHAIN.hook, [attr(HOOK.num, u32be(hook.num)), attr(HOOK.priority, u32be(hook.priority))]),
    );
  return { what: `add chain ${chain.name}`, make: message(msg.newChain, NLM_F_CREATE, of, attrs) };
}

function newSet(of: Family, table: string, set: NftSet): BatchPart[] {
  const flags = SET_ANONYMOUS | SET_CONSTANT | (set.interval ? SET_INTERVAL : 0);
  const userdata = [...setUserdata.byteOrder, ...(set.interval ? setUserdata.merge : []), ...setUserdata.typeofTcpDport];
  const key = (port: number) => nest(SET_ELEM.key, [attr(DATA.value, u16be(port))]);
  return [
    {
      what: `add set ${set.name} (id ${set.id})`,
      make: message(msg.newSet, NLM_F_CREATE, of, [
        attr(SET.table, strz(table)),
        attr(SET.name, strz(set.name)),
        attr(SET.flags, u32be(flags)),
        attr(SET.keyType, u32be(TYPE_INET_SERVICE)),
        attr(SET.keyLen, u32be(2)),
        attr(SET.id, u32be(set.id)),
        nest(SET.desc, [attr(SET_DESC_SIZE, u32be(set.elements.length))]),
        attr(SET.userdata, Uint8Array.from(userdata)),
      ]),
    },
    {
      what: `add elements to set ${set.name} (id ${set.id})`,
      make: message(msg.newSetElem, NLM_F_CREATE, of, [
        attr(SET_ELEM_LIST.table, strz(table)),
        attr(SET_ELEM_LIST.set, strz(set.name)),
        attr(SET_ELEM_LIST.setId, u32be(set.id)),
        // Like libnftnl, each element's attribute type is its position.
        nest(
          SET_ELEM_LIST.elements,
          set.elements.map((element, index) =>
            nest(index + 1, element.end ? [attr(SET_ELEM.flags, u32be(SET_ELEM_INTERVAL_END)), key(element.key)] : [key(element.key)]),
          ),
        ),
      ]),
    },
  ];
}

/** One expression's attributes, in nft's order. */
function exprAttr(expr: Expr): Attr {
  const data = (bytes: Uint8Array) => [attr(DATA.value, bytes)];
  const expression = (name: string, attrs: Attr[]) => nest(LIST_ELEM, [attr(EXPR.name, strz(name)), nest(EXPR.data, attrs)]);
  switch (expr.kind) {
    case "meta":
      return expression("meta", [attr(2, u32be(expr.key)), attr(1, u32be(expr.dreg))]);
    case "cmp":
      return expression("cmp", [attr(1, u32be(expr.sreg)), attr(2, u32be(expr.op)), nest(3, data(expr.data))]);
    case "payload":
      return expression("payload", [
        attr(1, u32be(expr.dreg)),
        attr(2, u32be(expr.base)),
        attr(3, u32be(expr.offset)),
        attr(4, u32be(expr.len)),
      ]);
    case "bitwise":
      return expression("bitwise", [
        attr(1, u32be(expr.sreg)),
        attr(2, u32be(expr.dreg)),
        attr(3, u32be(expr.len)),
        nest(4, data(expr.mask)),
        nest(5, data(expr.xor)),
      ]);
    case "lookup":
      return expression("lookup", [
        attr(2, u32be(expr.sreg)),
        attr(1, strz(expr.set)),
        ...(expr.setId === undefined ? [] : [attr(4, u32be(expr.setId))]),
      ]);
    case "verdict":
      return expression("immediate", [
        attr(1, u32be(0)),
        nest(2, [
          nest(DATA.verdict, [
            attr(VERDICT.code, u32be(expr.code)),
            ...(expr.chain === undefined ? [] : [attr(VERDICT.chain, strz(expr.chain))]),
          ]),
        ]),
      ]);
    case "immediate":
      return expression("immediate", [attr(1, u32be(expr.dreg)), nest(2, data(expr.data))]);
    case "redir":
      return expression("redir", [attr(1, u32be(expr.protoMin)), attr(3, u32be(expr.flags))]);
    case "other":
      throw new Error(`cannot write nftables expression ${expr.name}`);
  }
}

function newRule(of: Family, table: string, rule: NftRule): BatchPart {
  const attrs = [attr(RULE.table, strz(table)), attr(RULE.chain, strz(rule.chain)), nest(RULE.expressions, rule.exprs.map(exprAttr))];
  if (rule.comment !== undefined) {
    const text = new TextEncoder().encode(`${rule.comment}\0`);
    attrs.push(attr(RULE.userdata, Uint8Array.from([UDATA_RULE_COMMENT, text.byteLength, ...text])));
  }
  return {
    what: `add rule to ${rule.chain}${rule.comment ? ` (${rule.comment})` : ""}`,
    make: message(msg.newRule, NLM_F_CREATE | NLM_F_APPEND, of, attrs),
  };
}

/** The messages that create a table's contents (its chains, then its sets and rules), after the table itself. */
export function tableContents(table: NftTable): BatchPart[] {
  return [
    ...table.chains.map((chain) => newChain(table.family, table.name, chain)),
    ...table.sets.flatMap((set) => newSet(table.family, table.name, set)),
    ...table.rules.map((rule) => newRule(table.family, table.name, rule)),
  ];
}

/** A dump request (tables, chains, sets, rules) for one family, or a set's elements. */
export function dumpRequest(type: number, of: Family, attrs: Attr[] = []): (seq: number) => Uint8Array {
  return (seq) => encodeMessage({ type: nftType(type), flags: NLM_F_REQUEST | NLM_F_DUMP, seq, family: family(of), attrs });
}

export const setElementsRequest = (of: Family, table: string, set: string) =>
  dumpRequest(msg.getSetElem, of, [attr(SET_ELEM_LIST.table, strz(table)), attr(SET_ELEM_LIST.set, strz(set))]);

function decodeData(value: Uint8Array | undefined): Uint8Array {
  return value ? (attrMap(value).get(DATA.value) ?? new Uint8Array()) : new Uint8Array();
}

/** One expression read back; kinds meshcni does not write come back as "other". */
function decodeExpr(element: Uint8Array): Expr {
  const top = attrMap(element);
  const name = readStrz(top.get(EXPR.name)) ?? "?";
  const a = attrMap(top.get(EXPR.data) ?? new Uint8Array());
  const u32 = (type: number) => readU32be(a.get(type)) ?? -1;
  switch (name) {
    case "meta":
      return a.has(1) ? { kind: "meta", key: u32(2), dreg: u32(1) } : { kind: "other", name: "meta-set" };
    case "cmp":
      return { kind: "cmp", sreg: u32(1), op: u32(2), data: decodeData(a.get(3)) };
    case "payload":
      return a.has(1)
        ? { kind: "payload", dreg: u32(1), base: u32(2), offset: u32(3), len: u32(4) }
        : { kind: "other", name: "payload-set" };
    case "bitwise":
      return { kind: "bitwise", sreg: u32(1), dreg: u32(2), len: u32(3), mask: decodeData(a.get(4)), xor: decodeData(a.get(5)) };
    case "lookup":
      return { kind: "lookup", sreg: u32(2), set: readStrz(a.get(1)) ?? "", setId: readU32be(a.get(4)) };
    case "immediate": {
      const dreg = u32(1);
      const value = attrMap(a.get(2) ?? new Uint8Array());
      const verdict = value.get(DATA.verdict);
      if (dreg === 0 && verdict) {
        const v = attrMap(verdict);
        return { kind: "verdict", code: readI32be(v.get(VERDICT.code)) ?? 0, chain: readStrz(v.get(VERDICT.chain)) };
      }
      return { kind: "immediate", dreg, data: value.get(DATA.value) ?? new Uint8Array() };
    }
    case "redir":
      return { kind: "redir", protoMin: u32(1), flags: readU32be(a.get(3)) ?? 0 };
    default:
      return { kind: "other", name };
  }
}

/** The comment in a rule's userdata (a list of type, length, value). */
function decodeComment(userdata: Uint8Array | undefined): string | undefined {
  for (let at = 0; userdata && at + 2 <= userdata.byteLength; at += 2 + userdata[at + 1]!) {
    if (userdata[at] === UDATA_RULE_COMMENT) return readStrz(userdata.subarray(at + 2, at + 2 + userdata[at + 1]!));
  }
  return undefined;
}

/** Messages from dumps of one family, sorted into its tables by name (only those `wanted`). */
export interface Dumps {
  tables: NetlinkMessage[];
  chains: NetlinkMessage[];
  sets: NetlinkMessage[];
  rules: NetlinkMessage[];
  /** Per set name: its elements' messages. */
  elements: Map<string, NetlinkMessage[]>;
}

const body = (message: NetlinkMessage) => attrMap(message.payload.subarray(4));

/** The names of the tables a dump found. */
export function tableNames(tables: NetlinkMessage[]): string[] {
  return tables.flatMap((message) => readStrz(body(message).get(TABLE.name)) ?? []);
}

/** The anonymous and named sets of a table, from a set dump. */
export function setNames(sets: NetlinkMessage[], table: string): string[] {
  return sets.flatMap((message) => {
    const a = body(message);
    return readStrz(a.get(SET.table)) === table ? [readStrz(a.get(SET.name)) ?? ""] : [];
  });
}

/** Builds one table from the dumps, or undefined when there is no such table. */
export function decodeTable(of: Family, name: string, dumps: Dumps): NftTable | undefined {
  if (!tableNames(dumps.tables).includes(name)) return undefined;
  const inTable = (message: NetlinkMessage, tableAttr: number) => readStrz(body(message).get(tableAttr)) === name;
  const chains: NftChain[] = dumps.chains
    .filter((message) => inTable(message, CHAIN.table))
    .map((message) => {
      const a = body(message);
      const hook = a.get(CHAIN.hook) ? attrMap(a.get(CHAIN.hook)!) : undefined;
      const chainName = readStrz(a.get(CHAIN.name)) ?? "";
      if (!hook) return { name: chainName };
      return {
        name: chainName,
        hook: {
          num: readU32be(hook.get(HOOK.num)) ?? -1,
          priority: readI32be(hook.get(HOOK.priority)) ?? 0,
          type: readStrz(a.get(CHAIN.type)) ?? "",
          policy: readU32be(a.get(CHAIN.policy)) ?? 1,
        },
      };
    });
  const sets: NftSet[] = dumps.sets
    .filter((message) => inTable(message, SET.table))
    .map((message) => {
      const a = body(message);
      const setName = readStrz(a.get(SET.name)) ?? "";
      const elements = (dumps.elements.get(setName) ?? []).flatMap((reply) =>
        parseAttrs(body(reply).get(SET_ELEM_LIST.elements) ?? new Uint8Array()).map((element) => {
          const e = attrMap(element.value);
          const key = decodeData(e.get(SET_ELEM.key));
          return {
            key: readU16be(key),
            end: ((readU32be(e.get(SET_ELEM.flags)) ?? 0) & SET_ELEM_INTERVAL_END) !== 0,
          };
        }),
      );
      return {
        name: setName,
        id: readU32be(a.get(SET.id)) ?? 0,
        interval: ((readU32be(a.get(SET.flags)) ?? 0) & SET_INTERVAL) !== 0,
        elements,
      };
    });
  const rules: NftRule[] = dumps.rules
    .filter((message) => inTable(message, RULE.table))
    .map((message) => {
      const a = body(message);
      return {
        chain: readStrz(a.get(RULE.chain)) ?? "",
        exprs: parseAttrs(a.get(RULE.expressions) ?? new Uint8Array()).map((element) => decodeExpr(element.value)),
        comment: decodeComment(a.get(RULE.userdata)),
      };
    });
  return { family: of, name, chains, sets, rules };
}
