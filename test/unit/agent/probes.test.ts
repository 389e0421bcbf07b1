import { describe, expect, it } from "vitest";
import { checkLiveness } from "../../../src/agent/probes.js";

/** /healthz: 503 once the reconcile loop missed three resyncs and at least 30 s (docs/observability.md: Metrics, probes and Events). */
describe("the agent's liveness", () => {
  it("stays alive through three missed resyncs or 30 s, whichever is longer, and not one moment more", () => {
    // --resync-seconds 10: 30 s either way.
    expect(checkLiveness(0, 30_000, 10)).toEqual({ alive: true, reason: "ok" });
    expect(checkLiveness(0, 30_001, 10)).toEqual({ alive: false, reason: "no reconcile for 30 s (limit 30 s)" });
    // --resync-seconds 60: three resyncs, 180 s.
    expect(checkLiveness(1000, 181_000, 60).alive).toBe(true);
    expect(checkLiveness(1000, 181_001, 60)).toEqual({ alive: false, reason: "no reconcile for 180 s (limit 180 s)" });
    // --resync-seconds 1: still 30 s, a slow disk is no reason to be restarted.
    expect(checkLiveness(0, 29_000, 1).alive).toBe(true);
  });
});
