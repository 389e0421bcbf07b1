import { diffTable } from "../redirect/diff.js";
import type { Redirector } from "../redirect/redirector.js";
import type { Family } from "../redirect/spec.js";
import { planTable } from "./from-plan.js";
import { type BatchPart, type DumpFamily, dumpRequest, familyWord, msg } from "./message.js";
import { natBefore } from "./nat-before.js";
import { type Dumps, decodeTable, type NftTable, tableContents, tableName } from "./ruleset.js";
import { setElementsRequest, setNames } from "./set.js";
import { NftablesError, NftSocket } from "./socket.js";
import { deleteTable, newTable, tableNames } from "./table.js";
import { canonicalPlan, natTableOf } from "./to-plan.js";

const EEXIST = 17;

/** What the redirector talks to: nf_tables (or, in tests, a kernel that answers as it would). */
export type SocketOpener = () => Promise<NftSocket>;

/**
 * nf_tables over netlink, in-process: the redirect is a table of meshcni's own per family
 * (`ip meshcni`, `ip6 meshcni`) with nat base chains at prerouting and output. ADD is one
 * batch for every family; a repeated ADD reads the tables back and replaces only those
 * that differ, in one batch; DEL deletes the tables in one batch. Reading a family back
 * also lists other tables' NAT that runs first (inet's included). The socket is opened at
 * first use, in the netns the caller is in.
 */
export function nftablesRedirector(openSocket: SocketOpener = () => NftSocket.open()): Redirector {
  let socket: NftSocket | undefined;
  const open = async () => {
    socket ??= await openSocket();
    return socket;
  };
  const present = (nft: NftSocket, family: Family) =>
    tableNames(nft.dump(`list tables (${family})`, dumpRequest(msg.getTable, family))).includes(tableName);
  /** Every chain and rule of a family's tables (or inet's). */
  const listed = (nft: NftSocket, family: DumpFamily) => ({
    chains: nft.dump(`list chains (${family})`, dumpRequest(msg.getChain, family)),
    rules: nft.dump(`list rules (${family})`, dumpRequest(msg.getRule, family)),
  });
  const readTable = (nft: NftSocket, family: Family, objects = listed(nft, family)): NftTable | undefined => {
    const tables = nft.dump(`list tables (${family})`, dumpRequest(msg.getTable, family));
    if (!tableNames(tables).includes(tableName)) return undefined;
    const sets = nft.dump(`list sets (${family})`, dumpRequest(msg.getSet, family));
    const dumps: Dumps = {
      tables,
      ...objects,
      sets,
      elements: new Map(
        setNames(sets, tableName).map((set) => [set, nft.dump(`list set ${set}`, setElementsRequest(family, tableName, set))]),
      ),
    };
    return decodeTable(family, tableName, dumps);
  };
  return {
    backend: "nftables",
    async apply(plans) {
      const nft = await open();
      let setId = 0;
      const tables = plans.map((plan) => planTable(plan, () => ++setId));
      try {
        // A fresh netns: each table created, failing (EEXIST) as a whole when one is there.
        nft.commit(tables.flatMap((table) => [newTable(table.family, table.name, true), ...tableContents(table)]));
        return plans.map((plan) => plan.family);
      } catch (error) {
        if (!(error instanceof NftablesError && error.errno === EEXIST)) throw error;
      }
      const differing = tables.filter((_, index) => {
        const plan = plans[index]!;
        return diffTable(canonicalPlan(plan), natTableOf(readTable(nft, plan.family))).length > 0;
      });
      if (differing.length === 0) return [];
      // Replaced atomically: created if missing, deleted with all it holds, created anew.
      nft.commit(
        differing.flatMap((table): BatchPart[] => [
          newTable(table.family, table.name, false),
          deleteTable(table.family, table.name),
          newTable(table.family, table.name, false),
          ...tableContents(table),
        ]),
      );
      return differing.map((table) => table.family);
    },
    async read(family) {
      const nft = await open();
      const objects = listed(nft, family);
      const word = familyWord(family);
      const others = [
        { word, ...objects },
        { word: "inet", ...listed(nft, "inet") },
      ];
      return { ...natTableOf(readTable(nft, family, objects)), natBefore: natBefore(family, { word, table: tableName }, others) };
    },
    expected: canonicalPlan,
    async remove(families) {
      const nft = await open();
      const found = families.filter((family) => present(nft, family));
      if (found.length > 0) nft.commit(found.map((family) => deleteTable(family, tableName)));
      return found;
    },
    close: () => socket?.close(),
  };
}
