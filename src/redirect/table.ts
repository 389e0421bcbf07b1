import { ownChains } from "./plan.js";

/**
 * The most of a netns's rules any backend reads at once (an nf_tables dump, an iptables
 * save's output): some 40,000 rules. meshcni's own, at the annotations' cap, are under 1 MiB;
 * a pod with NET_ADMIN fills its own netns as it likes, and the agent reading it must not.
 */
export const readLimitBytes = 8 << 20;

/** One rule read back from a netns, in the plan's vocabulary (iptables arguments). */
export interface SavedRule {
  chain: string;
  /** Arguments after `-A CHAIN`, unquoted. */
  args: string[];
  /** The same arguments as the backend printed them (iptables-save's quoting), for `-D CHAIN <text>`. */
  text: string;
}

/** What one family's nat table holds, as a backend read it back: the chains and their rules. */
export interface NatTable {
  chains: Set<string>;
  rules: SavedRule[];
  /**
   * Whether every chain here is meshcni's (nftables: a table of its own, so anything else
   * in it is a difference) or the table is shared (iptables' nat table: PREROUTING and
   * OUTPUT hold everyone's rules, and only those before meshcni's jumps matter).
   */
  ownTable: boolean;
  /** NAT outside this table that runs before it at the same hook (another nftables table), one line per rule. */
  natBefore: string[];
}

export const emptyTable = (ownTable: boolean): NatTable => ({ chains: new Set(), rules: [], ownTable, natBefore: [] });

export function rulesOf(table: NatTable, chain: string): SavedRule[] {
  return table.rules.filter((rule) => rule.chain === chain);
}

/** The word after the first of `flags` in a rule's arguments. */
function argumentAfter(rule: SavedRule, flags: readonly string[]): string | undefined {
  const index = rule.args.findIndex((token) => flags.includes(token));
  return index >= 0 ? rule.args[index + 1] : undefined;
}

/** A rule's -j target: a chain, or REDIRECT, RETURN… */
export const jumpTarget = (rule: SavedRule) => argumentAfter(rule, ["-j"]);

/** The chain a rule jumps (-j) or goes (-g) to, or its target. */
const chainReached = (rule: SavedRule) => argumentAfter(rule, ["-j", "-g"]);

/** Rules outside our chains that jump or go into them (ours, Linkerd's, another's, or left by an older run). */
export function jumpsIntoOwnChains(table: NatTable): SavedRule[] {
  return table.rules.filter(
    (rule) => !(ownChains as readonly string[]).includes(rule.chain) && (ownChains as readonly string[]).includes(chainReached(rule) ?? ""),
  );
}

/** True when any trace of the redirect is in the table. */
export function hasOwnRules(table: NatTable): boolean {
  return ownChains.some((chain) => table.chains.has(chain)) || jumpsIntoOwnChains(table).length > 0;
}

/** The redirect a table holds as rule lines, in planLines' order: the jumps into our chains, then their rules. */
export function ownLines(table: NatTable): string[] {
  const line = (rule: SavedRule) => `-A ${rule.chain} ${rule.args.join(" ")}`;
  return [...jumpsIntoOwnChains(table).map(line), ...ownChains.flatMap((chain) => rulesOf(table, chain).map(line))];
}

/** Items grouped by a key, in their order: one pass, so walking rules chain by chain stays linear. */
export function groupedBy<T, K>(items: readonly T[], key: (item: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const item of items) {
    const group = groups.get(key(item));
    if (group) group.push(item);
    else groups.set(key(item), [item]);
  }
  return groups;
}
