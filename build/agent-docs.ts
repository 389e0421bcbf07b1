// `npm run manifests` (with deploy/ and the chart): docs/agent.md's table of the agent's flags,
// made from the table the agent parses them by (src/agent/flags.ts); test/unit/agent/flags.test.ts
// checks it is current.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type AgentFlag, agentEnvironment, agentFlags, shownDefault } from "../src/agent/flags.js";

export const agentDocPath = join(import.meta.dirname, "../docs/agent.md");
const start = "<!-- agent-flags:start -->";
const end = "<!-- agent-flags:end -->";

const code = (text: string) => `\`${text}\``;

/** A default as the docs show it: a value in code; the table's own words (`shown`) as written. */
function defaultCell(flag: AgentFlag): string {
  const shown = shownDefault(flag);
  if (shown === undefined) return "";
  return flag.shown !== undefined || flag.arg === undefined ? shown : code(shown);
}

/** Rows as a Markdown table, its columns padded to one width each (as the docs' other tables). */
function table(header: string[], rows: string[][]): string {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: string[]) => `| ${cells.map((cell, column) => cell.padEnd(widths[column]!)).join(" | ")} |`;
  return [line(header), line(widths.map((width) => "-".repeat(width))), ...rows.map(line)].join("\n");
}

/** The agent's flags and environment as docs/agent.md shows them. */
export function agentFlagsTable(): string {
  const flagRows = agentFlags.map((flag: AgentFlag) => [
    `${code(`--${flag.name}${flag.arg ? ` ${flag.arg}` : ""}`)}${flag.repeatable ? " (repeatable)" : ""}`,
    flag.env ? code(flag.env.name) : "",
    defaultCell(flag),
    flag.help,
  ]);
  const envRows = agentEnvironment.map(({ names, help }) => ["", names.map(code).join(", "), "", help]);
  return table(["flag", "environment", "default", "what it does"], [...flagRows, ...envRows]);
}

/** docs/agent.md with its flags' table as the code makes it now. */
export function withAgentFlagsTable(doc: string): string {
  const from = doc.indexOf(start);
  const to = doc.indexOf(end);
  if (from < 0 || to < from) throw new Error(`docs/agent.md has no ${start} … ${end} block`);
  return `${doc.slice(0, from + start.length)}\n\n${agentFlagsTable()}\n\n${doc.slice(to)}`;
}

if (import.meta.main) writeFileSync(agentDocPath, withAgentFlagsTable(readFileSync(agentDocPath, "utf8")));
