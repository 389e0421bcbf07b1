import type { Backend } from "../redirect/redirector.js";
import type { Family } from "../redirect/spec.js";
import { type DumpFamily, dumpRequest, familyWord, msg } from "./message.js";
import { type FamilyDumps, natBefore, untrackedTcp } from "./nat-before.js";
import { NftSocket } from "./socket.js";

/** The table iptables-nft keeps `-t nat` in: an iptables backend's own reading judges it. */
const xtablesNat = "nat";

/**
 * What in the nf_tables of the netns the caller is in lets TCP past a redirect held by
 * `backend`, one line per rule: untracked TCP (iptables-nft's raw table, or any chain before
 * conntrack), whatever the backend; and for an iptables backend, NAT in other tables that
 * runs first (the nftables backend's own reading lists that: see nftablesRedirector.read).
 */
export async function nftBypasses(backend: Backend, families: Family[], openSocket = () => NftSocket.open()): Promise<string[]> {
  const nft = await openSocket();
  try {
    const listed = (family: DumpFamily, word: string): FamilyDumps => ({
      word,
      chains: nft.dump(`list chains (${family})`, dumpRequest(msg.getChain, family)),
      rules: nft.dump(`list rules (${family})`, dumpRequest(msg.getRule, family)),
    });
    const inet = listed("inet", "inet");
    return families.flatMap((family) => {
      const word = familyWord(family);
      const dumps = [listed(family, word), inet];
      const untracked = untrackedTcp(family, dumps).map((line) => `${family}: untracked TCP never reaches the redirect: ${line}`);
      const nat =
        backend === "nftables"
          ? []
          : natBefore(family, backend === "legacy" ? undefined : { word, table: xtablesNat }, dumps).map(
              (line) => `${family}: NAT that runs before the redirect lets traffic bypass the proxy: ${line}`,
            );
      return [...untracked, ...nat];
    });
  } finally {
    nft.close();
  }
}
