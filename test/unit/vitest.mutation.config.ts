import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

/**
 * The unit tests alone, for `npm run test:mutation` (stryker.config.mjs): the root config also
 * runs the netns, CRI and cluster suites and adds the suite-kinds reporter, neither of which a
 * mutant run wants.
 */
export default defineConfig({
  root: fileURLToPath(new URL("../..", import.meta.url)),
  test: {
    include: ["test/unit/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
