import { describe, expect, it } from "vitest";
import { rootSuiteMode, skipRootSuitesVariable } from "../../kit/root-suites.js";
import { tallyByKind, tallyLines } from "../../kit/suite-kinds.js";

describe("the root suites, and the run's summary by kind", () => {
  it("runs the root suites as root, fails them without it, and skips them only when asked", () => {
    expect(rootSuiteMode(true, {})).toBe("run");
    expect(rootSuiteMode(true, { [skipRootSuitesVariable]: "1" })).toBe("run");
    expect(rootSuiteMode(false, {})).toBe("fail");
    expect(rootSuiteMode(false, { [skipRootSuitesVariable]: "0" })).toBe("fail");
    expect(rootSuiteMode(false, { [skipRootSuitesVariable]: "1" })).toBe("skip");
  });

  it("counts files and tests by the folder under test/, skipped ones apart", () => {
    const tallies = tallyByKind([
      { path: "test/unit/a.test.ts", tests: ["passed", "passed"] },
      { path: "test/netns/b.test.ts", tests: ["skipped", "skipped", "skipped"] },
      { path: "test/netns/c.test.ts", tests: ["failed", "passed"] },
      { path: "test/cluster/d.test.ts", tests: ["pending"] },
    ]);
    expect(tallies).toEqual([
      ["cluster", { files: 1, passed: 0, failed: 0, skipped: 0 }],
      ["netns", { files: 2, passed: 1, failed: 1, skipped: 3 }],
      ["unit", { files: 1, passed: 2, failed: 0, skipped: 0 }],
    ]);
    expect(tallyLines(tallies)).toEqual([
      "Suites by kind:",
      "  cluster      1 files     0 passed    0 failed    0 skipped",
      "  netns        2 files     1 passed    1 failed    3 skipped",
      "  unit         1 files     2 passed    0 failed    0 skipped",
    ]);
  });
});
