import { afterAll, beforeAll, expect, it } from "vitest";
import { PodFleet } from "../kit/audit/fleet.js";
import { describeAsRoot } from "../kit/root-suites.js";

/** `meshcni audit` over a node's 200 meshed pods, each in a real netns with meshcni's rules. */
describeAsRoot("meshcni audit at scale", () => {
  const fleet = new PodFleet();
  beforeAll(() => fleet.start(200), 180_000);
  afterAll(() => fleet.stop(), 60_000);

  it("audits 200 meshed pods on a node, every one protected", async () => {
    const started = performance.now();
    const result = await fleet.audit();
    const elapsed = performance.now() - started;
    expect(result.exitCode, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.summary).toEqual({ protected: 200, adopted: 0, missing: 0, drifted: 0, unknown: 0 });
    process.stdout.write(`\naudit of 200 pods: ${Math.round(elapsed)} ms (npm run bench measures it properly)\n`);
  }, 120_000);
});
