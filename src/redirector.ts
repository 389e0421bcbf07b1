import type { Backend } from "./iptables/backend.js";
import { diffTable } from "./iptables/diff.js";
import type { RulePlan } from "./iptables/plan.js";
import { hasOwnRules, type NatTable } from "./iptables/save.js";
import type { Family } from "./iptables/types.js";

/**
 * What writes, reads and removes a pod's redirect in the netns the caller is in: the
 * iptables binaries of one backend, or nf_tables over netlink. Plans, tables read back
 * and differences are in iptables' vocabulary for every backend, so records, CHECK, the
 * audit and `meshcni rules` speak one language.
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

export interface RedirectorOptions {
  /** iptables-restore's -w. */
  wait: boolean;
  /** Where legacy iptables' private lock files go. */
  lockDir: string;
}

/** A redirector for the backend, loading only that backend's code. */
export async function createRedirector(backend: Backend, options: RedirectorOptions): Promise<Redirector> {
  if (backend === "nftables") return (await import("./nftables/redirector.js")).nftablesRedirector();
  const [{ createIptablesRunner }, { iptablesRedirector }] = await Promise.all([
    import("./iptables/exec.js"),
    import("./iptables/redirector.js"),
  ]);
  return iptablesRedirector(await createIptablesRunner(backend, options));
}

/**
 * How each family's rules differ from its plan (each difference led by the family), and
 * whether any of the redirect is there at all.
 */
export async function inspectPlans(redirector: Redirector, plans: RulePlan[]): Promise<{ differences: string[]; hasRedirect: boolean }> {
  const differences: string[] = [];
  let hasRedirect = false;
  for (const plan of plans) {
    const table = await redirector.read(plan.family);
    differences.push(...diffTable(redirector.expected(plan), table).map((problem) => `${plan.family}: ${problem}`));
    hasRedirect ||= hasOwnRules(table);
  }
  return { differences, hasRedirect };
}
