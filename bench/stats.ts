import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface Summary {
  name: string;
  unit: "ms";
  samples: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/** Nearest-rank percentiles of a sample. */
export function summarize(name: string, samples: number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
  const round = (value: number) => Math.round(value * 100) / 100;
  return {
    name,
    unit: "ms",
    samples: sorted.length,
    p50: round(at(50)),
    p90: round(at(90)),
    p99: round(at(99)),
    max: round(sorted.at(-1)!),
  };
}

export function printTable(title: string, rows: Summary[]): void {
  console.log(`\n${title}`);
  console.log(
    `${"case".padEnd(48)}${"n".padStart(5)}${"p50 ms".padStart(10)}${"p90 ms".padStart(10)}${"p99 ms".padStart(10)}${"max ms".padStart(10)}`,
  );
  for (const row of rows) {
    console.log(
      `${row.name.padEnd(48)}${String(row.samples).padStart(5)}${row.p50.toFixed(2).padStart(10)}${row.p90.toFixed(2).padStart(10)}${row.p99.toFixed(2).padStart(10)}${row.max.toFixed(2).padStart(10)}`,
    );
  }
}

/** Writes the run's figures as JSON to bench/results/<section>-<time>.json. */
export function saveResults(section: string, results: unknown): string {
  const dir = join(import.meta.dirname, "results");
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${section}-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
  writeFileSync(path, `${JSON.stringify({ section, at: new Date().toISOString(), results }, null, 2)}\n`);
  return path;
}
