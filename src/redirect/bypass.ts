import type { RulePlan } from "./plan.js";
import { jumpTarget, type NatTable, rulesOf, type SavedRule } from "./table.js";

/**
 * Targets that neither end a chain's traversal nor send it elsewhere: a rule with one of
 * these (or none) before meshcni's jump cannot take a connection past the redirect.
 * Anything else (RETURN, ACCEPT, DNAT, REDIRECT, a jump or goto to another chain, a target
 * meshcni does not know) can.
 */
const passThrough = new Set([undefined, "LOG", "NFLOG", "MARK", "CONNMARK", "AUDIT", "TRACE", "DROP"]);

const canDivert = (rule: SavedRule) => rule.args.includes("-g") || !passThrough.has(jumpTarget(rule));

/**
 * What lets a connection skip the redirect although meshcni's own rules are in place: in
 * a shared nat table, a rule before meshcni's jump in PREROUTING or OUTPUT that can end or
 * divert traversal; and NAT in another table that runs first. (In a table of meshcni's
 * own, any other rule is already a difference: see diffTable.) Empty when there is none.
 */
export function bypasses(plan: RulePlan, table: NatTable): string[] {
  const before = table.ownTable
    ? []
    : plan.jumps.flatMap((jump) => {
        const rules = rulesOf(table, jump.from);
        const at = rules.findIndex((rule) => jumpTarget(rule) === jump.to);
        return rules
          .slice(0, Math.max(at, 0))
          .filter(canDivert)
          .map((rule) => `${jump.from}: a rule before the jump to ${jump.to} lets traffic bypass the proxy: ${rule.text}`);
      });
  return [...before, ...table.natBefore.map((line) => `NAT that runs before the redirect lets traffic bypass the proxy: ${line}`)];
}
