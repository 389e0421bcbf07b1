import { emptyTable, type NatTable } from "../redirect/table.js";

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
export const parseNatTable = (output: string): NatTable => parseSavedTable(output, "nat");

/** Parses one table of `iptables-save` output (`nat`, `raw`…); other tables, comments and counters are skipped. */
export function parseSavedTable(output: string, name: string): NatTable {
  const table = emptyTable(false);
  let inTable = false;
  for (const line of output.split("\n")) {
    if (line.startsWith("*")) inTable = line === `*${name}`;
    else if (!inTable || line.startsWith("#")) continue;
    else if (line.startsWith(":")) table.chains.add(line.slice(1).split(" ")[0]!);
    else if (line.startsWith("-A ")) {
      const match = /^-A (\S+) ?(.*)$/.exec(line)!;
      table.rules.push({ chain: match[1]!, text: match[2]!, args: tokenize(match[2]!) });
    }
  }
  return table;
}
