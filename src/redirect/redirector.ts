import { bypasses } from "./bypass.js";
import { diffTable } from "./diff.js";
import type { RulePlan } from "./plan.js";
import type { Family } from "./spec.js";
import { hasOwnRules, type NatTable } from "./table.js";

/** Which iptables front end writes the rules; "plain" is whatever `iptables` is on the host. */
export type IptablesBackend = "legacy" | "nft" | "plain";
/** What writes the redirect: an iptables front end, or nf_tables over netlink in-process (no binary). */
export type Backend = IptablesBackend | "nftables";
export const backends = ["legacy", "nft", "plain", "nftables"] as const satisfies readonly Backend[];

/** What the netconf may ask for: a backend, or "auto" to detect the node's. */
export const iptablesModes = [...backends, "auto"] as const;
export type IptablesMode = (typeof iptablesModes)[number];

/**
 * What writes, reads and removes a pod's redirect in the netns the caller is in: the
 * iptables binaries of one backend (src/iptables/), or nf_tables over netlink
 * (src/nftables/). Plans, tables read back and differences are in one vocabulary for
 * every backend (iptables' arguments: what linkerd-cni wrote and operators read), so
 * records, CHECK, the audit and `meshcni rules` speak one language.
 */
export interface Redirector {
  readonly backend: Backend;
  /** Makes the netns hold every plan; returns the families whose rules it changed. Fails as a whole. */
  apply(plans: RulePlan[]): Promise<Family[]>;
  /** What the netns holds of the redirect in one family (our chains and the jumps into them). */
  read(family: Family): Promise<NatTable>;
  /** The plan as this backend reads it back (a set loses its order), to compare with read(). */
  expected(plan: RulePlan): RulePlan;
  /** Removes the redirect from these families; returns those that had any. Nothing there is fine. */
  remove(families: Family[]): Promise<Family[]>;
  /** Releases what it holds (a lock file, a socket). */
  close(): void;
}

/**
 * How each family's rules differ from its plan, and what lets traffic bypass them (each
 * difference led by the family), and whether any of the redirect is there at all.
 */
export async function inspectPlans(redirector: Redirector, plans: RulePlan[]): Promise<{ differences: string[]; hasRedirect: boolean }> {
  const differences: string[] = [];
  let hasRedirect = false;
  for (const plan of plans) {
    const table = await redirector.read(plan.family);
    const problems = [...diffTable(redirector.expected(plan), table), ...bypasses(plan, table)];
    differences.push(...problems.map((problem) => `${plan.family}: ${problem}`));
    hasRedirect ||= hasOwnRules(table);
  }
  return { differences, hasRedirect };
}
