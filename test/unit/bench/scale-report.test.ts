import { describe, expect, it } from "vitest";
import {
  added,
  addedEventsByResource,
  costLines,
  fitLine,
  formatScale,
  type Reading,
  type ScaleRun,
  starvedWindows,
  targetHolds,
} from "../../../bench/scale-report.js";

const reading = (millicores: number, rssMb: number, extra: Partial<Reading> = {}): Reading => ({
  millicores,
  rssMb,
  heapMb: rssMb / 2,
  liveHeapMb: rssMb / 3,
  watches: 0,
  requestsPerMinute: 0,
  watchEventsPerSecond: 0,
  ...extra,
});

/** A run of N nodes where each meshcni agent adds `ours` mCPU and MB to the API server, each kube-proxy `theirs`. */
function run(nodes: number, ours: number, theirs: number): ScaleRun {
  const both = (base: number, per: number) => ({
    idle: reading(base + per * nodes, 500 + per * nodes),
    churn: reading(2 * base + per * nodes, 500 + per * nodes),
    podChurn: reading(3 * base + per * nodes, 500 + per * nodes),
  });
  return {
    nodes,
    readings: {
      baseline: both(100, 0),
      meshcni: { ...both(100, ours), idle: { ...both(100, ours).idle, watches: 5 * nodes, ownRssMb: 70 } },
      "kube-proxy": both(100, theirs),
    },
  };
}

describe("the scale bench's arithmetic", () => {
  it("fits a line by least squares, and one point through the origin", () => {
    expect(
      fitLine([
        [10, 25],
        [50, 105],
        [100, 205],
      ]),
    ).toEqual({ slope: 2, intercept: 5 });
    expect(fitLine([[10, 30]])).toEqual({ slope: 3, intercept: 0 });
    expect(fitLine([])).toEqual({ slope: 0, intercept: 0 });
  });

  it("takes what N agents added from the baseline of the same mode", () => {
    expect(added(run(10, 2, 3), "meshcni", "churn")).toEqual({
      millicores: 20,
      rssMb: 20,
      heapMb: 10,
      liveHeapMb: expect.closeTo(20 / 3, 9),
      watches: 0,
      requestsPerMinute: 0,
      watchEventsPerSecond: 0,
    });
    expect(added(run(10, 2, 3), "meshcni", "idle").watches).toBe(50);
  });

  it("gives the cost per node at each N, the slope and the projection to 5,000 nodes", () => {
    const line = costLines([run(10, 2, 3), run(50, 2, 3), run(100, 2, 3)]).find(
      (candidate) => candidate.component === "kube-proxy" && candidate.mode === "idle" && candidate.metric === "millicores",
    );
    expect(line?.perNode).toEqual([
      { nodes: 10, value: 3 },
      { nodes: 50, value: 3 },
      { nodes: 100, value: 3 },
    ]);
    expect(line?.slope).toBeCloseTo(3);
    expect(line?.at5000).toBeCloseTo(15_000);
  });

  it("holds the target only when meshcni's slope is at most kube-proxy's for CPU and memory, idle and under both churn mixes", () => {
    expect(targetHolds(costLines([run(10, 2, 3), run(50, 2, 3)])).holds).toBe(true);
    const exceeded = targetHolds(costLines([run(10, 4, 3), run(50, 4, 3)]));
    expect(exceeded.holds).toBe(false);
    expect(exceeded.compared).toContain("idle millicores: meshcni 4.00 per node, kube-proxy 3.00: exceeds");
    // Only the second mix over: the target does not hold.
    const second = [run(10, 2, 3), run(50, 2, 3)];
    for (const one of second) one.readings.meshcni.podChurn.millicores += one.nodes * 2;
    const verdict = targetHolds(costLines(second));
    expect(verdict.holds).toBe(false);
    expect(verdict.compared).toContain("podChurn millicores: meshcni 4.00 per node, kube-proxy 3.00: exceeds");
    expect(verdict.compared).toContain("churn millicores: meshcni 2.00 per node, kube-proxy 3.00: holds");
  });

  it("cannot tell when a window answered fewer churn calls than the baseline: the host, not the API server, set the pace", () => {
    const runs = [run(10, 2, 3), run(50, 2, 3)];
    for (const one of runs) for (const phase of ["baseline", "meshcni", "kube-proxy"] as const) one.readings[phase].churn.churnCalls = 300;
    expect(starvedWindows(runs)).toEqual([]);
    runs[1]!.readings["kube-proxy"].churn.churnCalls = 285;
    expect(starvedWindows(runs)).toEqual([]);
    runs[1]!.readings["kube-proxy"].churn.churnCalls = 284;
    expect(starvedWindows(runs)).toEqual(["kube-proxy churn at N=50: 284 of the baseline's 300 calls answered"]);
    const text = formatScale(runs);
    expect(text).toContain("no more than kube-proxy): cannot tell (the host set the pace)");
    expect(text).toContain("  not comparable: kube-proxy churn at N=50: 284 of the baseline's 300 calls answered");
  });

  it("says where the added watch events go, by resource, largest first, the baseline's taken away", () => {
    const churning = run(100, 2, 3);
    churning.readings.baseline.churn.watchEventsByResource = { pods: 4, namespaces: 1 };
    churning.readings.meshcni.churn.watchEventsByResource = { pods: 54, namespaces: 101, daemonsets: 0.01 };
    churning.readings["kube-proxy"].churn.watchEventsByResource = { endpointslices: 50, pods: 4 };
    expect(addedEventsByResource(churning, "meshcni", "churn")).toEqual([
      ["namespaces", 100],
      ["pods", 50],
    ]);
    expect(addedEventsByResource(churning, "kube-proxy", "idle")).toEqual([]);
    churning.daemonSetEventsPerChange = 101;
    churning.readings.meshcni.churn = { ...churning.readings.meshcni.churn, hostIdle: 0.153, churnCalls: 300 };
    churning.readings.meshcni.idle.hostIdle = 0.5;
    const text = formatScale([run(10, 2, 3), churning]);
    expect(text).toContain("a rollout changes it a few times per node): ? at N=10, 101 at N=100");
    expect(text).toContain(
      "N=100, host idle (idle / churn / podChurn windows) and calls answered (churn / podChurn): baseline ?/?/? ?/?, meshcni 50%/15%/? 300/?,",
    );
    expect(text).toContain("meshcni at N=100 under churn, watch events/s added by resource: namespaces 100.0, pods 50.0");
    expect(text).toContain("kube-proxy at N=100 under churn, watch events/s added by resource: endpointslices 50.0");
  });

  it("prints every component's line and the verdict", () => {
    const text = formatScale([run(10, 2, 3), run(50, 2, 3)]);
    expect(text).toMatch(/^meshcni idle API mCPU +2\.00 +2\.00 +2\.00 +10000$/m);
    expect(text).toMatch(/^meshcni at N=10: 70\.0 MB resident each \(idle\)$/m);
    expect(text).toContain("target (per node, meshcni's agent costs the API server's CPU and memory no more than kube-proxy): holds");
  });
});
