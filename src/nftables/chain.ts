import type { Family } from "../redirect/spec.js";
import { type BatchPart, batchPart, bodyOf, msg } from "./message.js";
import { attr, attrMap, type NetlinkMessage, NLM_F_CREATE, nest, readI32be, readStrz, readU32be, strz, u32be } from "./netlink.js";

/** A chain's attributes (NFTA_CHAIN_*) and a base chain's hook (NFTA_HOOK_*). */
const CHAIN = { table: 1, name: 3, hook: 4, policy: 5, type: 7 } as const;
const HOOK = { num: 1, priority: 2 } as const;

/** Netfilter hooks of iptables' nat PREROUTING and OUTPUT (NF_INET_*), and the priority they run at (NF_IP_PRI_NAT_DST). */
export const HOOK_PREROUTING = 0;
export const HOOK_OUTPUT = 3;
export const PRIORITY_DSTNAT = -100;

export interface NftChain {
  name: string;
  /** Base chains: where they hook. */
  hook?: { num: number; priority: number; type: string; policy: number };
}

export function newChain(family: Family, table: string, chain: NftChain): BatchPart {
  const { hook } = chain;
  const attrs = [attr(CHAIN.table, strz(table)), attr(CHAIN.name, strz(chain.name))];
  if (hook)
    attrs.push(
      attr(CHAIN.type, strz(hook.type)),
      attr(CHAIN.policy, u32be(hook.policy)),
      nest(CHAIN.hook, [attr(HOOK.num, u32be(hook.num)), attr(HOOK.priority, u32be(hook.priority))]),
    );
  return batchPart(`add chain ${chain.name}`, msg.newChain, NLM_F_CREATE, family, CHAIN, attrs);
}

/** Deletes an empty chain nothing jumps to (flush it and the jumps first, in the same batch). */
export function deleteChain(family: Family, table: string, name: string): BatchPart {
  return batchPart(`delete chain ${name}`, msg.delChain, 0, family, CHAIN, [attr(CHAIN.table, strz(table)), attr(CHAIN.name, strz(name))]);
}

/** A chain from a dump, with the table it is in. */
export function decodeChain(message: NetlinkMessage): { table: string | undefined; chain: NftChain } {
  const body = bodyOf(message);
  const name = readStrz(body.get(CHAIN.name)) ?? "";
  const hookAttrs = body.get(CHAIN.hook);
  const table = readStrz(body.get(CHAIN.table));
  if (!hookAttrs) return { table, chain: { name } };
  const hook = attrMap(hookAttrs);
  return {
    table,
    chain: {
      name,
      hook: {
        num: readU32be(hook.get(HOOK.num)) ?? -1,
        priority: readI32be(hook.get(HOOK.priority)) ?? 0,
        type: readStrz(body.get(CHAIN.type)) ?? "",
        policy: readU32be(body.get(CHAIN.policy)) ?? 1,
      },
    },
  };
}
