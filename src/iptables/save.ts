import { ownChains } from "./plan.js";

export interface SavedRule {
  chain: string;
  /** Arguments after `-A CHAIN`, unquoted. */
  args: string[];
  /** The same arguments as iptables-save wrote them, for `-D CHAIN <text>`. */
  text: string;
}

/** The nat table of one family as iptables-save printed it. */
export interface NatTable {
  chains: Set<string>;
  rules: SavedRule[];
}

/** Splits a rule the way iptables-restore does: whitespace-separated, "quoted" groups, \-escapes. */
export function tokenize(text: string): string[] {
  const tokens: string[] = [];
  let current = "";
  let inToken = false;
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    if (char === "\\" && i + 1 < text.length) {
      current += text[++i];
      inToken = true;
    } else if (char === '"') {
      quoted = !quoted;
      inToken = true;
    } else if (!quoted && /\s/.test(char)) {
      if (inToken) tokens.push(current);
      current = "";
      inToken = false;
    } else {
      current += char;
      inToken = true;
    }
  }
  if (inToken) tokens.push(current);
  return tokens;
}

/** Parses `iptables-save -t nat` output; other tables, comments and counters are skipped. */
export function parseNatTable(output: string): NatTable {
  const table: NatTable = { chains: new Set(), rules: [] };
  let inNat = false;
  for (const line of output.split("\n")) {
    if (line.startsWith("*")) inNat = line === "*nat";
    else if (!inNat || line.startsWith("#")) continue;
    else if (line.startsWith(":")) table.chains.add(line.slice(1).split(" ")[0]!);
    else if (line.startsWith("-A ")) {
      const match = /^-A (\S+) ?(.*)$/.exec(line)!;
      table.rules.push({ chain: match[1]!, text: match[2]!, args: tokenize(match[2]!) });
    }
  }
  return table;
}

export function rulesOf(table: NatTable, chain: string): SavedRule[] {
  return table.rules.filter((rule) => rule.chain === chain);
}

export function jumpTarget(rule: SavedRule): string | undefined {
  const index = rule.args.indexOf("-j");
  return index >= 0 ? rule.args[index + 1] : undefined;
}

/** Rules outside our chains that jump into them (ours, Linkerd's, or left by an older run). */
export function jumpsIntoOwnChains(table: NatTable): SavedRule[] {
  return table.rules.filter(
    (rule) => !(ownChains as readonly string[]).includes(rule.chain) && (ownChains as readonly string[]).includes(jumpTarget(rule) ?? ""),
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
