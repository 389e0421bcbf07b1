// `npm run test:matrix [LEG...]`: the real-cluster suite (test/cluster) on each leg of
// test/kit/cluster/leg.ts (every leg when none is named), one after another: the leg's
// components built (once; cached), then the suite run with MESHCNI_LEG set. Prints each leg's
// tests and time, and writes the table of the legs run into docs/reference.md's Compatibility
// section. Exits 1 when any leg failed.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { projectRoot } from "../paths.js";
import { type LegName, legEnv, legs } from "./leg.js";
import { compatibilityPath, type LegResult, withMatrixTable } from "./matrix-table.js";

const named = process.argv.slice(2);
for (const name of named) if (!(name in legs)) throw new Error(`no leg ${name}; the legs are ${Object.keys(legs).join(", ")}`);
const run = (named.length > 0 ? named : Object.keys(legs)) as LegName[];

interface VitestJson {
  numPassedTests: number;
  numFailedTests: number;
  numPendingTests: number;
}

const results: LegResult[] = [];
const scratch = mkdtempSync(join(tmpdir(), "meshcni-matrix-"));
for (const name of run) {
  const env = { ...process.env, ...legEnv(name) };
  console.log(`\n=== leg ${name}: ${JSON.stringify(legs[name])}`);
  const building = performance.now();
  await execa("bash", [join(projectRoot, "build/cluster/components.sh")], { env, stdout: "ignore", stderr: "inherit" });
  const buildSeconds = (performance.now() - building) / 1000;
  const started = performance.now();
  const report = join(scratch, `${name}.json`);
  const suite = await execa(
    "npx",
    ["vitest", "run", "test/cluster", "--reporter=default", "--reporter=json", `--outputFile.json=${report}`],
    {
      cwd: projectRoot,
      env,
      stdio: "inherit",
      reject: false,
    },
  );
  const seconds = (performance.now() - started) / 1000;
  const counts = JSON.parse(readFileSync(report, "utf8")) as VitestJson;
  const result: LegResult = {
    name,
    ...legs[name],
    passed: counts.numPassedTests,
    failed: counts.numFailedTests + (suite.exitCode !== 0 && counts.numFailedTests === 0 ? 1 : 0),
    skipped: counts.numPendingTests,
    seconds: Math.round(seconds),
    date: new Date().toISOString().slice(0, 10),
  };
  results.push(result);
  console.log(
    `=== leg ${name}: ${result.passed} passed, ${result.failed} failed, ${result.skipped} skipped in ${result.seconds} s (components ready in ${Math.round(buildSeconds)} s)`,
  );
}
rmSync(scratch, { recursive: true, force: true });

writeFileSync(compatibilityPath, withMatrixTable(readFileSync(compatibilityPath, "utf8"), results));
console.log("\nleg                  tests  failed  skipped  time");
for (const result of results)
  console.log(
    `${result.name.padEnd(20)} ${String(result.passed).padStart(5)}  ${String(result.failed).padStart(6)}  ${String(result.skipped).padStart(7)}  ${result.seconds} s`,
  );
process.exit(results.some((result) => result.failed > 0) ? 1 : 0);
