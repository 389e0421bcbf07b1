import type { Family } from "../redirect/spec.js";
import { type BatchPart, batchPart, bodyOf, familyWord, msg } from "./message.js";
import { attr, type NetlinkMessage, NLM_F_CREATE, NLM_F_EXCL, readStrz, strz, u32be } from "./netlink.js";

/** A table's attributes (NFTA_TABLE_*). */
const TABLE = { name: 1, flags: 2 } as const;

/** Creates the table; `exclusive` fails the batch with EEXIST when it is there already. */
export function newTable(family: Family, name: string, exclusive: boolean): BatchPart {
  return batchPart(`add table ${familyWord(family)} ${name}`, msg.newTable, exclusive ? NLM_F_CREATE | NLM_F_EXCL : 0, family, TABLE, [
    attr(TABLE.name, strz(name)),
    attr(TABLE.flags, u32be(0)),
  ]);
}

/** Deletes the table with everything in it. */
export function deleteTable(family: Family, name: string): BatchPart {
  return batchPart(`delete table ${familyWord(family)} ${name}`, msg.delTable, 0, family, TABLE, [attr(TABLE.name, strz(name))]);
}

/** The names of the tables a dump found. */
export function tableNames(tables: NetlinkMessage[]): string[] {
  return tables.flatMap((message) => readStrz(bodyOf(message).get(TABLE.name)) ?? []);
}
