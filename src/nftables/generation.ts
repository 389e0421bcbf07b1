import { bodyOf, msg } from "./message.js";
import { encodeMessage, type NetlinkMessage, NFNL_SUBSYS_NFTABLES, NLM_F_REQUEST, readU32be } from "./netlink.js";
import { NftSocket } from "./socket.js";

/** NFTA_GEN_ID, from linux/netfilter/nf_tables.h. */
const genId = 1;

/** NFT_MSG_GETGEN: the ruleset's generation, of every family (NFPROTO_UNSPEC). */
export const generationRequest = (seq: number) =>
  encodeMessage({ type: (NFNL_SUBSYS_NFTABLES << 8) | msg.getGen, flags: NLM_F_REQUEST, seq, family: 0, attrs: [] });

/** The generation the kernel's answer (NFT_MSG_NEWGEN) names, pure. */
export function decodeGeneration(answer: NetlinkMessage): number {
  const generation = readU32be(bodyOf(answer).get(genId));
  if (generation === undefined) throw new Error("nftables: the generation's answer has no NFTA_GEN_ID");
  return generation;
}

/**
 * The generation of the nf_tables ruleset of the netns the caller is in. The kernel counts
 * it up at every change committed there, by nftables and iptables-nft alike, so a reading
 * equal to an earlier one of the same netns means none of its tables, chains, rules or sets
 * changed in between.
 */
export async function rulesetGeneration(openSocket = () => NftSocket.open()): Promise<number> {
  const nft = await openSocket();
  try {
    return decodeGeneration(nft.ask("get generation", generationRequest));
  } finally {
    nft.close();
  }
}
