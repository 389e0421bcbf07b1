// `npm run test:mutation`: mutates the pure deciders and runs the unit tests alone against each
// mutant (test/unit/vitest.mutation.config.ts). The survivors judged equivalent are listed in
// test/unit/MUTATION.md.
/** @type {import("@stryker-mutator/api/core").PartialStrykerOptions} */
export default {
  testRunner: "vitest",
  vitest: { configFile: "test/unit/vitest.mutation.config.ts" },
  coverageAnalysis: "perTest",
  mutate: ["src/redirect/**/*.ts", "src/mesh/**/*.ts", "src/cni/**/*.ts", "src/plugin/lookup.ts", "src/audit/classify.ts"],
  // What the sandbox need not copy: the caches but .cache/bin (its promtool is what a unit test
  // runs), the image, the benchmarks' output. The binary is copied: a unit test asks it for its help.
  ignorePatterns: ["/.cache/*", "!/.cache/bin", "/build/meshcni-image.tar", "/bench/results", "*.log"],
  tempDirName: ".stryker-tmp",
  // Stryker would rewrite tsconfig.json's `extends` and `references` for the sandbox through the
  // typescript package's JS API, which TypeScript 7 (native) no longer has. Ours has neither: no file to rewrite.
  tsconfigFile: "",
  // Two cores here, shared with whatever else runs.
  concurrency: 2,
  reporters: ["clear-text", "progress", "html", "json"],
  htmlReporter: { fileName: "reports/mutation/mutation.html" },
  jsonReporter: { fileName: "reports/mutation/mutation.json" },
  thresholds: { high: 95, low: 90, break: 90 },
};
