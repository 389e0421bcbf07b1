/**
 * Netlink framing for nf_tables, pure: message and attribute encoding and parsing. The
 * netlink and attribute headers are in host byte order; nfgenmsg's res_id and every
 * nf_tables number are big-endian (the callers pass them encoded). What the
 * messages say is the objects' business (table.ts, chain.ts, set.ts, rule.ts, expr/).
 */

export const NLM_F_REQUEST = 0x1;
export const NLM_F_ACK = 0x4;
export const NLM_F_DUMP = 0x300;
export const NLM_F_EXCL = 0x200;
export const NLM_F_CREATE = 0x400;
export const NLM_F_APPEND = 0x800;
/** In an error message: extended ack attributes follow the original header. */
const NLM_F_ACK_TLVS = 0x200;

export const NLMSG_ERROR = 2;
export const NLMSG_DONE = 3;
const NLA_F_NESTED = 0x8000;
const NLA_TYPE_MASK = 0x3fff;

/** nfnetlink's subsystem of nf_tables: the high byte of every nf_tables message type. */
export const NFNL_SUBSYS_NFTABLES = 10;
const NFNL_MSG_BATCH_BEGIN = 0x10;
const NFNL_MSG_BATCH_END = 0x11;

/** An attribute: raw bytes, or attributes nested in it. */
export type Attr = { type: number; value: Uint8Array } | { type: number; nested: Attr[] };

const pad4 = (length: number) => (length + 3) & ~3;

function attrLength(attr: Attr): number {
  return 4 + ("value" in attr ? attr.value.byteLength : attr.nested.reduce((sum, child) => sum + pad4(attrLength(child)), 0));
}

function writeAttr(view: DataView, bytes: Uint8Array, at: number, attr: Attr): number {
  const length = attrLength(attr);
  view.setUint16(at, length, true);
  view.setUint16(at + 2, "value" in attr ? attr.type : attr.type | NLA_F_NESTED, true);
  if ("value" in attr) bytes.set(attr.value, at + 4);
  else {
    let offset = at + 4;
    for (const child of attr.nested) offset = writeAttr(view, bytes, offset, child);
  }
  return at + pad4(length);
}

/** A netlink message: the 16-byte header, nfgenmsg (family, version 0, res_id) and the attributes. */
export function encodeMessage(options: {
  type: number;
  flags: number;
  seq: number;
  family: number;
  resId?: number;
  attrs?: Attr[];
}): Uint8Array {
  const attrs = options.attrs ?? [];
  const length = 20 + attrs.reduce((sum, attr) => sum + pad4(attrLength(attr)), 0);
  const bytes = new Uint8Array(length);
  const view = new DataView(bytes.buffer);
  view.setUint32(0, length, true);
  view.setUint16(4, options.type, true);
  view.setUint16(6, options.flags, true);
  view.setUint32(8, options.seq, true);
  view.setUint32(12, 0, true);
  bytes[16] = options.family;
  bytes[17] = 0;
  view.setUint16(18, options.resId ?? 0, false);
  let offset = 20;
  for (const attr of attrs) offset = writeAttr(view, bytes, offset, attr);
  return bytes;
}

/** Wraps messages in a batch (begin, end): the kernel applies it all or nothing. Sequence numbers start at `seq`. */
export function encodeBatch(seq: number, messages: Array<(seq: number) => Uint8Array>): Uint8Array {
  const marker = (type: number, at: number) =>
    encodeMessage({ type, flags: NLM_F_REQUEST, seq: at, family: 0, resId: NFNL_SUBSYS_NFTABLES });
  const parts = [
    marker(NFNL_MSG_BATCH_BEGIN, seq),
    ...messages.map((make, index) => make(seq + 1 + index)),
    marker(NFNL_MSG_BATCH_END, seq + 1 + messages.length),
  ];
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.byteLength, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.byteLength;
  }
  return out;
}

// Attribute values.
export const u32be = (value: number): Uint8Array => {
  const bytes = new Uint8Array(4);
  new DataView(bytes.buffer).setUint32(0, value >>> 0, false);
  return bytes;
};
/** Host byte order: every architecture meshcni ships for (x86-64, arm64) is little-endian. */
export const u32host = (value: number): Uint8Array => {
  const bytes = new Uint8Array(4);
  new DataView(bytes.buffer).setUint32(0, value >>> 0, true);
  return bytes;
};
export const u16be = (value: number): Uint8Array => new Uint8Array([(value >> 8) & 0xff, value & 0xff]);
export const strz = (text: string): Uint8Array => new TextEncoder().encode(`${text}\0`);
export const attr = (type: number, value: Uint8Array): Attr => ({ type, value });
export const nest = (type: number, nested: Attr[]): Attr => ({ type, nested });

/** A message the kernel sent. */
export interface NetlinkMessage {
  type: number;
  flags: number;
  seq: number;
  /** After the netlink header: nfgenmsg and attributes, or an error's payload. */
  payload: Uint8Array;
}

/** Splits a datagram into its messages; a truncated one ends the list. */
export function parseMessages(data: Uint8Array): NetlinkMessage[] {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const messages: NetlinkMessage[] = [];
  let offset = 0;
  while (offset + 16 <= data.byteLength) {
    const length = view.getUint32(offset, true);
    if (length < 16 || offset + length > data.byteLength) break;
    messages.push({
      type: view.getUint16(offset + 4, true),
      flags: view.getUint16(offset + 6, true),
      seq: view.getUint32(offset + 8, true),
      payload: data.subarray(offset + 16, offset + length),
    });
    offset += pad4(length);
  }
  return messages;
}

/** A parsed attribute; nested ones are parsed on demand with parseAttrs(value). */
export interface ParsedAttr {
  type: number;
  value: Uint8Array;
}

/** The attributes in a buffer, their type without the nested and byte-order flags. */
export function parseAttrs(data: Uint8Array): ParsedAttr[] {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const attrs: ParsedAttr[] = [];
  let offset = 0;
  while (offset + 4 <= data.byteLength) {
    const length = view.getUint16(offset, true);
    if (length < 4 || offset + length > data.byteLength) break;
    attrs.push({ type: view.getUint16(offset + 2, true) & NLA_TYPE_MASK, value: data.subarray(offset + 4, offset + length) });
    offset += pad4(length);
  }
  return attrs;
}

export function attrMap(data: Uint8Array): Map<number, Uint8Array> {
  return new Map(parseAttrs(data).map((parsed) => [parsed.type, parsed.value]));
}

export const readU32be = (value: Uint8Array | undefined): number | undefined =>
  value && value.byteLength >= 4 ? new DataView(value.buffer, value.byteOffset, 4).getUint32(0, false) : undefined;
export const readU32host = (value: Uint8Array | undefined): number | undefined =>
  value && value.byteLength >= 4 ? new DataView(value.buffer, value.byteOffset, 4).getUint32(0, true) : undefined;
export const readU16host = (value: Uint8Array | undefined): number | undefined =>
  value && value.byteLength >= 2 ? new DataView(value.buffer, value.byteOffset, 2).getUint16(0, true) : undefined;
export const readU16be = (value: Uint8Array): number => ((value[0] ?? 0) << 8) | (value[1] ?? 0);
export const readI32be = (value: Uint8Array | undefined): number | undefined =>
  value && value.byteLength >= 4 ? new DataView(value.buffer, value.byteOffset, 4).getInt32(0, false) : undefined;
export const readStrz = (value: Uint8Array | undefined): string | undefined => {
  if (!value) return undefined;
  const end = value.indexOf(0);
  return new TextDecoder().decode(end < 0 ? value : value.subarray(0, end));
};

/** The kernel's answer to one request: errno 0 is an ack. */
export interface NetlinkError {
  /** Positive errno, 0 for an ack. */
  errno: number;
  /** The sequence number of the request it answers. */
  seq: number;
  /** Extended ack: the kernel's message and the offset of the offending attribute in the request. */
  message: string | undefined;
  offset: number | undefined;
}

const NLMSGERR_ATTR_MSG = 1;
const NLMSGERR_ATTR_OFFS = 2;

/** In an error message: only the request's header follows errno (NETLINK_CAP_ACK), not the whole request. */
const NLM_F_CAPPED = 0x100;

/** Reads an NLMSG_ERROR: errno, the request (its header only when capped), then extended ack attributes. */
export function parseError(message: NetlinkMessage): NetlinkError {
  const view = new DataView(message.payload.buffer, message.payload.byteOffset, message.payload.byteLength);
  const errno = -view.getInt32(0, true);
  const seq = message.payload.byteLength >= 16 ? view.getUint32(12, true) : message.seq;
  const request = message.flags & NLM_F_CAPPED ? 16 : pad4(view.getUint32(4, true));
  const tlvs = message.flags & NLM_F_ACK_TLVS ? attrMap(message.payload.subarray(4 + request)) : new Map<number, Uint8Array>();
  return { errno, seq, message: readStrz(tlvs.get(NLMSGERR_ATTR_MSG)), offset: readU32host(tlvs.get(NLMSGERR_ATTR_OFFS)) };
}
