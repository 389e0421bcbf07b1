import { join } from "node:path";
import { projectRoot } from "../paths.js";
import { type Leg, type LegName, legs } from "./leg.js";

/** Where the matrix's table is: the Compatibility section of the reference. */
export const compatibilityPath = join(projectRoot, "docs/reference.md");
const start = "<!-- matrix:start -->";
const end = "<!-- matrix:end -->";

/** One leg's last run: its settings, its tests and how long the suite took, and the day. */
export interface LegResult extends Leg {
  name: string;
  passed: number;
  failed: number;
  skipped: number;
  seconds: number;
  date: string;
}

const header = [
  "leg",
  "primary",
  "Kubernetes",
  "containerd",
  "meshcni backend",
  "IP families",
  "passed",
  "failed",
  "skipped",
  "time",
  "run on",
];

const row = (result: LegResult) => [
  `\`${result.name}\``,
  result.primary,
  result.kubernetes,
  result.containerd,
  result.backend,
  result.families,
  String(result.passed),
  String(result.failed),
  String(result.skipped),
  `${result.seconds} s`,
  result.date,
];

/** The rows the doc holds now, by leg: a leg run before keeps its row until it is run again. */
export function tableRows(doc: string): Map<string, LegResult> {
  const block = doc.slice(doc.indexOf(start), doc.indexOf(end));
  const rows = new Map<string, LegResult>();
  for (const line of block.split("\n").filter((line) => line.startsWith("| `"))) {
    const cells = line
      .split("|")
      .slice(1, -1)
      .map((cell) => cell.trim());
    const [name, primary, kubernetes, containerd, backend, families, passed, failed, skipped, time, date] = cells;
    rows.set(name!.replaceAll("`", ""), {
      name: name!.replaceAll("`", ""),
      ...({ primary, kubernetes, containerd, backend, families } as unknown as Leg),
      passed: Number(passed),
      failed: Number(failed),
      skipped: Number(skipped),
      seconds: Number.parseInt(time!, 10),
      date: date!,
    });
  }
  return rows;
}

/** The doc with its matrix table: this run's results over the rows of legs it did not run, in the legs' order. */
export function withMatrixTable(doc: string, results: LegResult[]): string {
  const from = doc.indexOf(start);
  const to = doc.indexOf(end);
  if (from < 0 || to < from) throw new Error(`docs/reference.md has no ${start} … ${end} block`);
  const rows = tableRows(doc);
  for (const result of results) rows.set(result.name, result);
  const ordered = (Object.keys(legs) as LegName[]).flatMap((name) => rows.get(name) ?? []);
  const cells = [header, ...ordered.map(row)];
  const widths = header.map((_, column) => Math.max(...cells.map((line) => line[column]!.length)));
  const line = (values: string[]) => `| ${values.map((value, column) => value.padEnd(widths[column]!)).join(" | ")} |`;
  const table = [line(header), line(widths.map((width) => "-".repeat(width))), ...ordered.map((result) => line(row(result)))].join("\n");
  return `${doc.slice(0, from + start.length)}\n\n${table}\n\n${doc.slice(to)}`;
}
