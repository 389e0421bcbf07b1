import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // The netns suites share the machine's iptables and /var/lib/cni: one file at a time.
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // The default report, and how many suites of each kind (unit, netns, cri, cluster…) ran or were skipped.
    reporters: ["default", "./test/kit/suite-kinds.ts"],
  },
});
