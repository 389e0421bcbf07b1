import type { Family } from "../redirect/spec.js";
import { decodeChain, HOOK_OUTPUT, HOOK_PREROUTING, PRIORITY_DSTNAT } from "./chain.js";
import type { NetlinkMessage } from "./netlink.js";
import { decodeRule, type NftRule } from "./rule.js";
import { tableName } from "./ruleset.js";
import { ruleArgs } from "./to-plan.js";

/** One family's (or inet's) chains and rules, as dumped, under the word nft lists them with ("ip", "inet"). */
export interface FamilyDumps {
  word: string;
  chains: NetlinkMessage[];
  rules: NetlinkMessage[];
}

const hookNames: Record<number, string> = { [HOOK_PREROUTING]: "prerouting", [HOOK_OUTPUT]: "output" };
/** Expressions that rewrite a connection's address or port. */
const rewrites = new Set(["redir", "nat", "masq", "tproxy"]);

const rewritesTcp = (rule: NftRule, args: string[]) => {
  const protocol = args.indexOf("-p");
  return (
    rule.exprs.some((expr) => rewrites.has(expr.kind === "other" ? expr.name : expr.kind)) && (protocol < 0 || args[protocol + 1] === "tcp")
  );
};

/**
 * NAT of other tables that runs before meshcni's, pure. A nat base chain at prerouting or
 * output at meshcni's priority (dstnat) or earlier sees a connection first, and once it
 * rewrites it the kernel runs no later nat chain for it. Each rule that can rewrite TCP in
 * such a chain, or in a chain it jumps or goes to, is one line naming the table, the hook
 * and the rule (in iptables' words where it has them). meshcni's own table (`ours`, the
 * word of its family) is left out.
 */
export function natBefore(family: Family, ours: string, dumps: FamilyDumps[]): string[] {
  return dumps.flatMap(({ word, chains, rules }) => {
    const decoded = rules.map(decodeRule).filter(({ table }) => !(word === ours && table === tableName));
    return chains.map(decodeChain).flatMap(({ table, chain }) => {
      const hook = chain.hook;
      if (hook?.type !== "nat" || !hookNames[hook.num] || hook.priority > PRIORITY_DSTNAT) return [];
      if (word === ours && table === tableName) return [];
      const inTable = decoded.filter((rule) => rule.table === table).map(({ rule }) => rule);
      // The chains it reaches: itself, and those its rules (and theirs) jump or go to.
      const reached = new Set([chain.name]);
      for (const name of reached)
        for (const rule of inTable.filter((candidate) => candidate.chain === name))
          for (const expr of rule.exprs) if (expr.kind === "verdict" && expr.chain) reached.add(expr.chain);
      return inTable
        .filter((rule) => reached.has(rule.chain))
        .map((rule) => ({ rule, args: ruleArgs(rule, family, []) }))
        .filter(({ rule, args }) => rewritesTcp(rule, args))
        .map(
          ({ rule, args }) =>
            `table ${word} ${table}, nat at ${hookNames[hook.num]} priority ${hook.priority}, chain ${rule.chain}: ${args.join(" ")}`,
        );
    });
  });
}
