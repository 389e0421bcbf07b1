import type { RulePlan } from "./plan.js";
import { jumpsIntoOwnChains, jumpTarget, type NatTable, rulesOf, type SavedRule } from "./table.js";

export function sameArgs(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((token, i) => token === b[i]);
}

const show = (args: readonly string[]) => args.join(" ");

// NUL cannot occur in an argument (the kernel's argv, iptables-save's output), so no two rules share a key.
const ruleKey = (args: readonly string[]) => args.join("\0");

function diffChain(chain: string, planned: string[][], found: string[][]): string[] {
  // Sets, so a diff stays linear in the rules (a tenant's annotations can make a thousand).
  const inFound = new Set(found.map(ruleKey));
  const inPlan = new Set(planned.map(ruleKey));
  const missing = planned.filter((rule) => !inFound.has(ruleKey(rule)));
  const extra = found.filter((rule) => !inPlan.has(ruleKey(rule)));
  const differences = [
    ...missing.map((rule) => `${chain}: missing rule: ${show(rule)}`),
    ...extra.map((rule) => `${chain}: unexpected rule: ${show(rule)}`),
  ];
  const inOrder = planned.length === found.length && planned.every((rule, i) => sameArgs(rule, found[i]!));
  if (differences.length === 0 && !inOrder) {
    differences.push(`${chain}: rules are reordered or repeated: found [${found.map(show).join(" | ")}]`);
  }
  return differences;
}

/**
 * Lists how a table differs from the plan: missing, extra or reordered rules in our
 * chains, and missing, altered, repeated or stray jumps into them. Empty means it matches.
 */
export function diffTable(plan: RulePlan, table: NatTable): string[] {
  const differences: string[] = [];
  for (const [chain, planned] of Object.entries(plan.chains)) {
    if (!table.chains.has(chain)) differences.push(`chain ${chain} is missing`);
    else
      differences.push(
        ...diffChain(
          chain,
          planned,
          rulesOf(table, chain).map((rule) => rule.args),
        ),
      );
  }
  const jumps = jumpsIntoOwnChains(table);
  for (const jump of plan.jumps) {
    const found = jumps.filter((rule) => rule.chain === jump.from && jumpTarget(rule) === jump.to);
    if (found.length === 0) differences.push(`missing jump from ${jump.from} to ${jump.to}`);
    else if (!found.some((rule) => sameArgs(rule.args, jump.args))) {
      differences.push(`${jump.from}: jump to ${jump.to} differs: ${show(found[0]!.args)}`);
    } else if (found.length > 1) differences.push(`${jump.from}: ${found.length} jumps to ${jump.to}, expected 1`);
  }
  const stray = jumps.filter((rule: SavedRule) => !plan.jumps.some((jump) => jump.from === rule.chain && jump.to === jumpTarget(rule)));
  differences.push(...stray.map((rule) => `${rule.chain}: unexpected jump: ${rule.text}`));
  if (table.ownTable) differences.push(...strangers(plan, table));
  return differences;
}

/** In a table of meshcni's own: chains it does not plan, and rules in its base chains other than the jumps. */
function strangers(plan: RulePlan, table: NatTable): string[] {
  const planned = new Set([...Object.keys(plan.chains), ...plan.jumps.map((jump) => jump.from)]);
  const jumps = new Set(jumpsIntoOwnChains(table));
  return [
    ...[...table.chains].filter((chain) => !planned.has(chain)).map((chain) => `chain ${chain} is not meshcni's`),
    ...table.rules
      .filter((rule) => !(rule.chain in plan.chains) && !jumps.has(rule))
      .map((rule) => `${rule.chain}: unexpected rule: ${rule.text}`),
  ];
}
