import { ownChains } from "../redirect/plan.js";
import type { Family } from "../redirect/spec.js";
import { decodeChain, deleteChain } from "./chain.js";
import { type BatchPart, dumpRequest, msg } from "./message.js";
import type { NetlinkMessage } from "./netlink.js";
import { decodeRule, deleteRules } from "./rule.js";
import { NftSocket } from "./socket.js";

/** The table iptables-nft keeps `-t nat` in, in each family. */
const natTable = "nat";

/**
 * The batch that removes meshcni's chains from iptables-nft's nat table as iptables' own
 * restore does (iptables/restore.ts renderRemove), pure: every rule of another chain that
 * jumps or goes to one of them, then the chains, flushed and deleted. Empty when none of it
 * is there.
 */
export function xtablesRemoval(family: Family, chains: NetlinkMessage[], rules: NetlinkMessage[]): BatchPart[] {
  const own = new Set<string>(ownChains);
  const jumps = rules
    .map(decodeRule)
    .filter(({ table, rule }) => table === natTable && !own.has(rule.chain))
    .filter(({ rule }) => rule.exprs.some((expr) => expr.kind === "verdict" && expr.chain !== undefined && own.has(expr.chain)))
    .map(({ rule, handle }) => deleteRules(family, natTable, rule.chain, handle));
  const present = chains
    .map(decodeChain)
    .filter(({ table, chain }) => table === natTable && own.has(chain.name))
    .map(({ chain }) => chain.name);
  return [
    ...jumps,
    ...present.map((chain) => deleteRules(family, natTable, chain)),
    ...present.map((chain) => deleteChain(family, natTable, chain)),
  ];
}

/**
 * Removes meshcni's iptables-nft chains over netlink, in the netns the caller is in, in one
 * batch per call: what `iptables-nft-save` and `iptables-nft-restore` do in two processes,
 * the second of which waits at its exit for nf_tables' destroy work (~10 ms). Returns the
 * families that had any of it. The socket is closed by close().
 */
export function xtablesRemover(openSocket: () => Promise<NftSocket> = () => NftSocket.open()) {
  let socket: NftSocket | undefined;
  return {
    async remove(families: Family[]): Promise<Family[]> {
      socket ??= await openSocket();
      const nft = socket;
      const removals = families.map((family) => ({
        family,
        parts: xtablesRemoval(
          family,
          nft.dump(`list chains (${family})`, dumpRequest(msg.getChain, family)),
          nft.dump(`list rules (${family})`, dumpRequest(msg.getRule, family)),
        ),
      }));
      const parts = removals.flatMap((removal) => removal.parts);
      if (parts.length > 0) nft.commit(parts);
      return removals.filter((removal) => removal.parts.length > 0).map((removal) => removal.family);
    },
    close: () => socket?.close(),
  };
}
