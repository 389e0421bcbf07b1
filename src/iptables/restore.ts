import { sameArgs } from "../redirect/diff.js";
import { ownChains, type RulePlan } from "../redirect/plan.js";
import { jumpsIntoOwnChains, type NatTable } from "../redirect/table.js";

/**
 * Every token meshcni writes is a validated number, CIDR, chain name or fixed word, so
 * this never fires on real input; it is the last guard against rule injection.
 */
const safeToken = /^[A-Za-z0-9_.:,/-]+$/;

function renderArgs(args: readonly string[]): string {
  for (const token of args) {
    if (!safeToken.test(token)) throw new Error(`refusing to render iptables token ${JSON.stringify(token)}`);
  }
  return args.join(" ");
}

/**
 * Restore text (for `--noflush`) that makes the table equal the plan in one commit:
 * declaring our chains creates or flushes them, their rules are re-added, each planned
 * jump is kept once, and every other jump into our chains is deleted.
 */
export function renderApply(plan: RulePlan, table: NatTable): string {
  const lines = ["*nat", ...Object.keys(plan.chains).map((chain) => `:${chain} - [0:0]`)];
  for (const [chain, rules] of Object.entries(plan.chains)) {
    lines.push(...rules.map((args) => `-A ${chain} ${renderArgs(args)}`));
  }
  const kept = new Set<string>();
  for (const rule of jumpsIntoOwnChains(table)) {
    const planned = plan.jumps.find((jump) => jump.from === rule.chain && sameArgs(jump.args, rule.args));
    if (planned && !kept.has(planned.from)) kept.add(planned.from);
    else lines.push(`-D ${rule.chain} ${rule.text}`);
  }
  for (const jump of plan.jumps) {
    if (!kept.has(jump.from)) lines.push(`-A ${jump.from} ${renderArgs(jump.args)}`);
  }
  lines.push("COMMIT", "");
  return lines.join("\n");
}

/**
 * Restore text for a table holding none of our chains: `-N` fails the whole commit if a
 * chain exists, so applying it needs no iptables-save first and can never duplicate.
 */
export function renderCreate(plan: RulePlan): string {
  return [
    "*nat",
    ...Object.keys(plan.chains).map((chain) => `-N ${chain}`),
    ...Object.entries(plan.chains).flatMap(([chain, rules]) => rules.map((args) => `-A ${chain} ${renderArgs(args)}`)),
    ...plan.jumps.map((jump) => `-A ${jump.from} ${renderArgs(jump.args)}`),
    "COMMIT",
    "",
  ].join("\n");
}

/** Restore text removing every jump into our chains and the chains, or undefined if none is there. */
export function renderRemove(table: NatTable): string | undefined {
  const jumps = jumpsIntoOwnChains(table);
  const chains = ownChains.filter((chain) => table.chains.has(chain));
  if (jumps.length === 0 && chains.length === 0) return undefined;
  return [
    "*nat",
    ...jumps.map((rule) => `-D ${rule.chain} ${rule.text}`),
    ...chains.flatMap((chain) => [`-F ${chain}`, `-X ${chain}`]),
    "COMMIT",
    "",
  ].join("\n");
}
