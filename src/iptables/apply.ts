import { diffTable } from "./diff.js";
import { IptablesError, type IptablesRunner } from "./exec.js";
import type { RulePlan } from "./plan.js";
import { renderApply, renderCreate, renderRemove } from "./restore.js";
import { hasOwnRules, parseNatTable } from "./save.js";
import type { Family } from "./types.js";

/**
 * Makes one family's nat table match the plan. A pod's first ADD meets a table without
 * our chains: one restore that creates them does it. When iptables refuses that restore
 * (the chains exist), one save and, unless the table matches already, one restore that
 * replaces them. Returns whether anything was written.
 */
export async function applyPlan(runner: IptablesRunner, plan: RulePlan): Promise<boolean> {
  try {
    await runner.restore(plan.family, renderCreate(plan));
    return true;
  } catch (error) {
    // Refused as a whole: the chains are there (a repeated ADD), or the rules are wrong;
    // the save below tells which. A missing or hung binary is no answer at all.
    if (!(error instanceof IptablesError && error.refused)) throw error;
  }
  const table = parseNatTable(await runner.save(plan.family));
  if (diffTable(plan, table).length === 0) return false;
  await runner.restore(plan.family, renderApply(plan, table));
  return true;
}

/**
 * How each family's nat table differs from its plan (each difference led by the family),
 * and whether any of the redirect is there at all.
 */
export async function inspectPlans(runner: IptablesRunner, plans: RulePlan[]): Promise<{ differences: string[]; hasRedirect: boolean }> {
  const differences: string[] = [];
  let hasRedirect = false;
  for (const plan of plans) {
    const table = parseNatTable(await runner.save(plan.family));
    differences.push(...diffTable(plan, table).map((problem) => `${plan.family}: ${problem}`));
    hasRedirect ||= hasOwnRules(table);
  }
  return { differences, hasRedirect };
}

/** Removes our chains and every jump into them from one family; nothing there is fine. Returns whether anything was. */
export async function removeOwnRules(runner: IptablesRunner, family: Family): Promise<boolean> {
  const removal = renderRemove(parseNatTable(await runner.save(family)));
  if (removal) await runner.restore(family, removal);
  return removal !== undefined;
}
