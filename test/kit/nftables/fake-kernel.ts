import type { Libc } from "../../../src/libc.js";
import { decodeChain, newChain } from "../../../src/nftables/chain.js";
import { type DumpFamily, msg } from "../../../src/nftables/message.js";
import {
  attrMap,
  encodeMessage,
  type NetlinkMessage,
  NLM_F_DUMP,
  NLM_F_EXCL,
  NLMSG_DONE,
  parseMessages,
  readStrz,
  readU32be,
} from "../../../src/nftables/netlink.js";
import { decodeRule, newRule } from "../../../src/nftables/rule.js";
import type { NftTable } from "../../../src/nftables/ruleset.js";
import { decodeElements, decodeSet, newSet } from "../../../src/nftables/set.js";
import { newTable, tableNames } from "../../../src/nftables/table.js";
import type { Family } from "../../../src/redirect/spec.js";
import { errorReply, noUnixSockets } from "./replies.js";

const EEXIST = 17;
const ENOENT = 2;
const EOPNOTSUPP = 95;

/** nfgenmsg's family: meshcni writes ip and ip6 tables; it also dumps inet's, which this kernel never holds. */
const dumpFamilyOf = (message: NetlinkMessage): DumpFamily =>
  (({ 1: "inet", 10: "ipv6" }) as const)[message.payload[0] as 1 | 10] ?? "ipv4";
const familyOf = (message: NetlinkMessage): Family => (message.payload[0] === 10 ? "ipv6" : "ipv4");
/** NFTA_SET_ELEM_LIST_TABLE, _SET and _SET_ID: what the fake needs of an elements message that decodeElements does not return. */
const elementList = (message: NetlinkMessage) => {
  const body = attrMap(message.payload.subarray(4));
  return { table: readStrz(body.get(1)), set: readStrz(body.get(2)) ?? "", setId: readU32be(body.get(4)) };
};

/**
 * nf_tables in memory, behind the Libc seam NftSocket talks through: batches applied all
 * or nothing (an exclusive add of an existing table is EEXIST, deleting a missing one
 * ENOENT; every message acked), anonymous sets named as the kernel names them, and dumps
 * answered from what it holds, encoded by meshcni's own encoders (the kernel's dump
 * messages carry the same attributes). `refuse` makes the next batch fail with an errno.
 */
export class FakeKernel {
  /** The tables it holds, by `family name`. */
  tables = new Map<string, NftTable>();
  /** Every batch it received, as its messages' types (`newTable`, `delTable`…), applied or not. */
  readonly batches: string[][] = [];
  readonly dumps: string[] = [];
  opened = 0;
  closed = 0;
  refuse: number | undefined;
  /** nf_tables' generation: counted up at each batch applied, as the kernel's is at each commit. */
  generation = 1;
  private replies: Uint8Array[] = [];
  private setCounter = 0;

  libc(): Libc {
    return {
      ...noUnixSockets,
      tryLock: () => true,
      peerCredentials: () => ({ pid: 1, uid: 0, gid: 0 }),
      setns: () => undefined,
      socket: () => {
        this.opened++;
        return 3;
      },
      setsockoptInt: () => undefined,
      sendToKernel: (_fd, data) => {
        const messages = parseMessages(data).filter((message) => message.type >> 8 === 10);
        const [first] = messages;
        if (messages.length === 1 && (first!.type & 0xff) === msg.getGen) this.replies.push(...this.answerGeneration(first!.seq));
        else if (messages.length === 1 && (first!.flags & NLM_F_DUMP) === NLM_F_DUMP) this.dump(first!);
        else this.batch(messages);
        return data.byteLength;
      },
      receive: (_fd, buffer) => {
        const next = this.replies.shift();
        if (!next) return undefined;
        buffer.set(next);
        return next.byteLength;
      },
      close: () => void this.closed++,
    };
  }

  private batch(messages: NetlinkMessage[]): void {
    const names = Object.fromEntries(Object.entries(msg).map(([name, type]) => [type, name]));
    this.batches.push(messages.map((message) => names[message.type & 0xff] ?? String(message.type & 0xff)));
    const next = new Map([...this.tables].map(([key, table]) => [key, structuredClone(table)]));
    const setNames = new Map<number, string>();
    for (const message of messages) {
      const errno = this.refuse ?? this.apply(message, next, setNames);
      this.replies.push(errorReply(message.seq, errno));
      if (errno !== 0) {
        // Aborted: nothing of the batch is applied.
        this.refuse = undefined;
        return;
      }
    }
    this.tables = next;
    this.generation++;
  }

  /** NFT_MSG_NEWGEN (its NFTA_GEN_ID big-endian) and the ack; the refusal alone when one is set. */
  private answerGeneration(seq: number): Uint8Array[] {
    if (this.refuse !== undefined) return [errorReply(seq, this.refuse)];
    const id = new Uint8Array(4);
    new DataView(id.buffer).setUint32(0, this.generation, false);
    return [encodeMessage({ type: (10 << 8) | 15, flags: 0, seq, family: 0, attrs: [{ type: 1, value: id }] }), errorReply(seq, 0)];
  }

  /** Applies one message of a batch to `tables`; its errno (0: done). */
  private apply(message: NetlinkMessage, tables: Map<string, NftTable>, setNames: Map<number, string>): number {
    const family = familyOf(message);
    const key = (name: string | undefined) => `${family} ${name}`;
    const inTable = (name: string | undefined, change: (table: NftTable) => number) => {
      const table = tables.get(key(name));
      return table ? change(table) : ENOENT;
    };
    switch (message.type & 0xff) {
      case msg.newTable: {
        const [name] = tableNames([message]);
        if (tables.has(key(name))) return message.flags & NLM_F_EXCL ? EEXIST : 0;
        tables.set(key(name), { family, name: name!, chains: [], sets: [], rules: [] });
        return 0;
      }
      case msg.delTable:
        return tables.delete(key(tableNames([message])[0])) ? 0 : ENOENT;
      case msg.newChain: {
        const { table, chain } = decodeChain(message);
        return inTable(table, (held) => {
          held.chains.push(chain);
          return 0;
        });
      }
      case msg.newSet: {
        const { table, set } = decodeSet(message);
        return inTable(table, (held) => {
          const name = set.name.includes("%d") ? `__set${this.setCounter++}` : set.name;
          setNames.set(set.id, name);
          held.sets.push({ ...set, name, elements: [] });
          return 0;
        });
      }
      case msg.newSetElem: {
        const { table, set, setId } = elementList(message);
        return inTable(table, (held) => {
          const target = held.sets.find((candidate) => candidate.name === (setId === undefined ? set : setNames.get(setId)));
          if (!target) return ENOENT;
          target.elements.push(...decodeElements(message));
          return 0;
        });
      }
      case msg.newRule: {
        const { table, rule } = decodeRule(message);
        return inTable(table, (held) => {
          if (!held.chains.some((chain) => chain.name === rule.chain)) return ENOENT;
          // The kernel names a lookup's set by its own name; the batch's set id is gone.
          const exprs = rule.exprs.map((expr) =>
            expr.kind === "lookup" && expr.setId !== undefined
              ? { ...expr, set: setNames.get(expr.setId) ?? expr.set, setId: undefined }
              : expr,
          );
          held.rules.push({ ...rule, exprs });
          return 0;
        });
      }
      default:
        return EOPNOTSUPP;
    }
  }

  /** Answers a dump request with what the kernel holds of that family, then NLMSG_DONE. */
  private dump(request: NetlinkMessage): void {
    const family = dumpFamilyOf(request);
    const type = request.type & 0xff;
    const held = [...this.tables.values()].filter((table) => table.family === family);
    this.dumps.push(`${Object.entries(msg).find(([, number]) => number === type)?.[0]} ${family}`);
    const parts =
      type === msg.getTable
        ? held.map((table) => newTable(table.family, table.name, false))
        : type === msg.getChain
          ? held.flatMap((table) => table.chains.map((chain) => newChain(table.family, table.name, chain)))
          : type === msg.getSet
            ? held.flatMap((table) => table.sets.map((set) => newSet(table.family, table.name, set)[0]!))
            : type === msg.getRule
              ? held.flatMap((table) => table.rules.map((rule) => newRule(table.family, table.name, rule)))
              : held.flatMap((table) =>
                  table.sets.filter((set) => set.name === elementList(request).set).map((set) => newSet(table.family, table.name, set)[1]!),
                );
    for (const part of parts) this.replies.push(part.make(request.seq));
    const done = new Uint8Array(20);
    const view = new DataView(done.buffer);
    view.setUint32(0, 20, true);
    view.setUint16(4, NLMSG_DONE, true);
    view.setUint32(8, request.seq, true);
    this.replies.push(done);
  }
}
