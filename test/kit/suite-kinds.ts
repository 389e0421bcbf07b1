import { relative } from "node:path";
import type { Reporter, TestModule } from "vitest/node";

type Tally = { files: number; passed: number; failed: number; skipped: number };

/** What a run's files were, by kind (the folder under test/), and how their tests ended. */
export function tallyByKind(modules: ReadonlyArray<{ path: string; tests: Array<"passed" | "failed" | "skipped" | "pending"> }>) {
  const kinds = new Map<string, Tally>();
  for (const { path, tests } of modules) {
    const kind = path.split("/")[1] ?? "other";
    const tally = kinds.get(kind) ?? { files: 0, passed: 0, failed: 0, skipped: 0 };
    tally.files++;
    for (const state of tests) if (state !== "pending") tally[state]++;
    kinds.set(kind, tally);
  }
  return [...kinds.entries()].sort(([a], [b]) => a.localeCompare(b));
}

/** The lines the run ends with: per kind, files and tests passed, failed and skipped, so a run that skipped a kind says so. */
export function tallyLines(tallies: ReturnType<typeof tallyByKind>): string[] {
  return [
    "Suites by kind:",
    ...tallies.map(
      ([kind, { files, passed, failed, skipped }]) =>
        `  ${kind.padEnd(10)} ${String(files).padStart(3)} files  ${String(passed).padStart(4)} passed  ${String(failed).padStart(3)} failed  ${String(skipped).padStart(3)} skipped`,
    ),
  ];
}

/** vitest's reporter for it (beside the default one). */
export default class SuiteKindsReporter implements Reporter {
  private root = process.cwd();

  onInit(vitest: { config: { root: string } }): void {
    this.root = vitest.config.root;
  }

  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const modules = testModules.map((module) => ({
      path: relative(this.root, module.moduleId),
      tests: [...module.children.allTests()].map((test) => test.result().state),
    }));
    process.stdout.write(`\n${tallyLines(tallyByKind(modules)).join("\n")}\n`);
  }
}
