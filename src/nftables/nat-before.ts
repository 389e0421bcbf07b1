import type { Family } from "../redirect/spec.js";
import { groupedBy } from "../redirect/table.js";
import { decodeChain, HOOK_OUTPUT, HOOK_PREROUTING, type NftChain, PRIORITY_DSTNAT } from "./chain.js";
import type { NetlinkMessage } from "./netlink.js";
import { decodeRule, type NftRule } from "./rule.js";
import { ruleArgs } from "./to-plan.js";

/** One family's (or inet's) chains and rules, as dumped, under the word nft lists them with ("ip", "inet"). */
export interface FamilyDumps {
  word: string;
  chains: NetlinkMessage[];
  rules: NetlinkMessage[];
}

/** A table a caller's own reading already judges (meshcni's, or iptables-nft's nat table): left out here. */
export interface OwnTable {
  word: string;
  table: string;
}

const hookNames: Record<number, string> = { [HOOK_PREROUTING]: "prerouting", [HOOK_OUTPUT]: "output" };
/** Expressions that rewrite a connection's address or port. */
const rewrites = new Set(["redir", "nat", "masq", "tproxy"]);
/** Conntrack's own priority (NF_IP_PRI_CONNTRACK): a chain before it can leave a packet untracked. */
const PRIORITY_CONNTRACK = -200;

const isTcpOrAny = (args: string[]) => {
  const protocol = args.indexOf("-p");
  return protocol < 0 || args[protocol + 1] === "tcp";
};
const rewritesTcp = (rule: NftRule, args: string[]) =>
  rule.exprs.some((expr) => rewrites.has(expr.kind === "other" ? expr.name : expr.kind)) && isTcpOrAny(args);
const untracksTcp = (rule: NftRule, args: string[]) =>
  rule.exprs.some((expr) => expr.kind === "other" && expr.untracks) && isTcpOrAny(args);

/**
 * Each rule that `matters` in a base chain at prerouting or output that `hooked` takes, or in
 * a chain it jumps or goes to, as one line naming the table, the hook and the rule (in
 * iptables' words where it has them), pure. `own` is left out.
 */
function rulesReached(
  family: Family,
  dumps: FamilyDumps[],
  own: OwnTable | undefined,
  hooked: (hook: NonNullable<NftChain["hook"]>) => boolean,
  matters: (rule: NftRule, args: string[]) => boolean,
): string[] {
  return dumps.flatMap(({ word, chains, rules }) => {
    const mine = (table: string | undefined) => own !== undefined && word === own.word && table === own.table;
    const decoded = rules.map(decodeRule).filter(({ table }) => !mine(table));
    // Grouped once, by table then chain: a pod can fill its own tables, and the walk must stay linear in the rules.
    const byTable = new Map(
      [...groupedBy(decoded, ({ table }) => table)].map(([table, entries]) => {
        const inTable = entries.map(({ rule }) => rule);
        return [table, { inTable, byChain: groupedBy(inTable, (rule) => rule.chain) }];
      }),
    );
    return chains.map(decodeChain).flatMap(({ table, chain }) => {
      const hook = chain.hook;
      if (!hook || !hookNames[hook.num] || !hooked(hook) || mine(table)) return [];
      const { inTable, byChain } = byTable.get(table) ?? { inTable: [], byChain: new Map<string, NftRule[]>() };
      // The chains it reaches: itself, and those its rules (and theirs) jump or go to.
      const reached = new Set([chain.name]);
      for (const name of reached)
        for (const rule of byChain.get(name) ?? [])
          for (const expr of rule.exprs) if (expr.kind === "verdict" && expr.chain) reached.add(expr.chain);
      return inTable
        .filter((rule) => reached.has(rule.chain))
        .map((rule) => ({ rule, args: ruleArgs(rule, family, []) }))
        .filter(({ rule, args }) => matters(rule, args))
        .map(
          ({ rule, args }) =>
            `table ${word} ${table}, ${hook.type} at ${hookNames[hook.num]} priority ${hook.priority}, chain ${rule.chain}: ${args.join(" ")}`,
        );
    });
  });
}

/**
 * NAT of other tables that runs before meshcni's, pure. A nat base chain at prerouting or
 * output at meshcni's priority (dstnat) or earlier sees a connection first, and once it
 * rewrites it the kernel runs no later nat chain for it. Each rule that can rewrite TCP in
 * such a chain, or one it reaches, is a line.
 */
export function natBefore(family: Family, own: OwnTable | undefined, dumps: FamilyDumps[]): string[] {
  return rulesReached(family, dumps, own, (hook) => hook.type === "nat" && hook.priority <= PRIORITY_DSTNAT, rewritesTcp);
}

/**
 * TCP left untracked, pure: a rule at prerouting or output before conntrack (iptables' raw
 * table, or any chain there) that can send TCP on untracked never meets NAT, meshcni's
 * redirect included, whatever backend holds it.
 */
export function untrackedTcp(family: Family, dumps: FamilyDumps[]): string[] {
  return rulesReached(family, dumps, undefined, (hook) => hook.priority < PRIORITY_CONNTRACK, untracksTcp);
}
