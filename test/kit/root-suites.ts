import { describe, it } from "vitest";
import { isRoot } from "./common.js";

/** Set to 1 by a developer who means to run without root: the root suites are then skipped, and the run's summary says so. */
export const skipRootSuitesVariable = "MESHCNI_SKIP_ROOT_SUITES";

/** Whether a root suite runs, is skipped (asked for without root) or fails (no root, not asked). */
export function rootSuiteMode(root: boolean, env: NodeJS.ProcessEnv): "run" | "skip" | "fail" {
  if (root) return "run";
  return env[skipRootSuitesVariable] === "1" ? "skip" : "fail";
}

/**
 * A suite that needs root (real netns, iptables, containerd, kubelet). Without root it
 * fails, so a run that cannot test the real paths is never green, unless the developer
 * asked to skip them.
 */
export function describeAsRoot(name: string, suite: () => void): void {
  const mode = rootSuiteMode(isRoot, process.env);
  if (mode === "run") describe(name, suite);
  else if (mode === "skip") describe.skip(name, suite);
  else
    describe(name, () => {
      it("runs as root", () => {
        throw new Error(
          `this suite needs root: run the tests as root, or set ${skipRootSuitesVariable}=1 to skip the root suites on purpose`,
        );
      });
    });
}
