import { diffTable } from "../redirect/diff.js";
import type { RulePlan } from "../redirect/plan.js";
import type { Redirector } from "../redirect/redirector.js";
import type { Family } from "../redirect/spec.js";
import { IptablesError, type IptablesRunner } from "./exec.js";
import { renderApply, renderCreate, renderRemove } from "./restore.js";
import { parseNatTable } from "./save.js";

/**
 * Makes one family's nat table match the plan. A pod's first ADD meets a table without
 * our chains: one restore that creates them does it. When iptables refuses that restore
 * (the chains exist), one save and, unless the table matches already, one restore that
 * replaces them. Returns whether anything was written.
 */
async function applyPlan(runner: IptablesRunner, plan: RulePlan): Promise<boolean> {
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

/** Removes our chains and every jump into them from one family; returns whether anything was there. */
async function removeOwnRules(runner: IptablesRunner, family: Family): Promise<boolean> {
  const removal = renderRemove(parseNatTable(await runner.save(family)));
  if (removal) await runner.restore(family, removal);
  return removal !== undefined;
}

/**
 * The iptables binaries of one backend: a save and a restore per family, each restore
 * atomic. Applying several families is not: when one fails, the families already changed
 * have their rules removed again before the failure is thrown, so an IPv4-only redirect
 * never stays to let IPv6 bypass the proxy.
 */
export function iptablesRedirector(runner: IptablesRunner): Redirector {
  return {
    backend: runner.backend,
    async apply(plans) {
      const changed: Family[] = [];
      try {
        for (const plan of plans) if (await applyPlan(runner, plan)) changed.push(plan.family);
      } catch (error) {
        for (const family of changed) await removeOwnRules(runner, family);
        throw error;
      }
      return changed;
    },
    read: async (family) => parseNatTable(await runner.save(family)),
    expected: (plan) => plan,
    async remove(families) {
      const removed: Family[] = [];
      for (const family of families) if (await removeOwnRules(runner, family)) removed.push(family);
      return removed;
    },
    close: () => runner.close(),
  };
}
