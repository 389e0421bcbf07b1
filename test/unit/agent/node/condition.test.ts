import type { V1Node, V1NodeCondition } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { ConditionKeeper, nodeCondition } from "../../../../src/agent/node/condition.js";
import type { Readiness } from "../../../../src/installer/readiness.js";
import type { NodeApi } from "../../../../src/kube/node-api.js";
import { until } from "../../../kit/common.js";
import { type LogEntry, memoryLogger } from "../../../kit/memory-logger.js";

const ready: Readiness = { ready: true, reasons: [], cause: undefined, active: "10-calico.conflist", missingPlugins: [] };
const counts = { protected: 3, adopted: 1, missing: 0, drifted: 0, unknown: 0 };
const sweeps = { counts, unprotected: [] };
const shown: V1Node = { metadata: { uid: "uid-n1" }, status: { conditions: [] } };

describe("the MeshcniReady condition", () => {
  it("is True and sums up the node's meshed pods; PodsUnprotected while one is left without its redirect; False with the problem's word", () => {
    expect(nodeCondition(ready, undefined, "1.2.3")).toEqual({
      status: "True",
      reason: "Ready",
      message: "meshcni 1.2.3 chained in 10-calico.conflist; meshed pods not audited yet",
    });
    expect(nodeCondition(ready, sweeps, "1.2.3")).toEqual({
      status: "True",
      reason: "Ready",
      message: "meshcni 1.2.3 chained in 10-calico.conflist; 4 meshed pods: 3 protected, 1 adopted",
    });
    expect(
      nodeCondition(
        ready,
        { counts: { ...counts, protected: 0, adopted: 0, missing: 2 }, unprotected: [{ namespace: "shop", name: "web" }] },
        "1.2.3",
      ),
    ).toMatchObject({
      status: "True",
      reason: "PodsUnprotected",
      message: "meshcni 1.2.3 chained in 10-calico.conflist; 2 meshed pods: 0 protected, 2 missing; 1 unprotected: shop/web",
    });
    const many = Array.from({ length: 7 }, (_, index) => ({ namespace: "shop", name: `p${index}` }));
    expect(nodeCondition(ready, { counts: { ...counts, missing: 7 }, unprotected: many }, "1").message).toMatch(
      /; 7 unprotected: shop\/p0, shop\/p1, shop\/p2, shop\/p3, shop\/p4 and 2 more$/,
    );
    // Found missing and redirected in place: protected now.
    expect(nodeCondition(ready, { counts: { ...counts, missing: 1 }, unprotected: [] }, "1.2.3").reason).toBe("Ready");
    const notChained: Readiness = {
      ready: false,
      reasons: ["/etc/cni/net.d/10-calico.conflist does not end with meshcni's entry"],
      cause: "NotChained",
      active: "10-calico.conflist",
      missingPlugins: [],
    };
    expect(nodeCondition(notChained, undefined, "1.2.3")).toEqual({
      status: "False",
      reason: "NotChained",
      message: "meshcni 1.2.3: /etc/cni/net.d/10-calico.conflist does not end with meshcni's entry",
    });
    // Not ready, the pods the sweeps left unprotected are still named (meshcni status lists them).
    expect(
      nodeCondition(notChained, { counts: { ...counts, missing: 1 }, unprotected: [{ namespace: "batch", name: "nightly" }] }, "1.2.3"),
    ).toEqual({
      status: "False",
      reason: "NotChained",
      message:
        "meshcni 1.2.3: /etc/cni/net.d/10-calico.conflist does not end with meshcni's entry; 5 meshed pods: 3 protected, 1 adopted, 1 missing; 1 unprotected: batch/nightly",
    });
  });
});

/** A NodeApi that only takes conditions, as the node's status then holds them. */
function conditionApi(fail = () => false) {
  const written: V1NodeCondition[] = [];
  const api = {
    async setNodeCondition(condition: V1NodeCondition) {
      if (fail()) throw new Error("503 the server is shutting down");
      written.push(condition);
    },
  } as unknown as NodeApi;
  return { api, written };
}

describe("the condition keeper", () => {
  it("writes once per change, never again for the same state, and a message-only change at most every 10 s", async () => {
    let now = 1_000_000;
    const { api, written } = conditionApi();
    const keeper = new ConditionKeeper(memoryLogger([]), () => now);
    const state = nodeCondition(ready, sweeps, "1");
    keeper.follow(api, state, undefined);
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Nothing before the Node is known.
    expect(written).toHaveLength(0);
    keeper.follow(api, state, shown);
    await until(() => written.length === 1);
    keeper.follow(api, state, undefined);
    // A watch event from before its own write changes nothing.
    keeper.follow(api, state, shown);
    // A new count alone: held back until 10 s after the last write.
    keeper.follow(api, nodeCondition(ready, { ...sweeps, counts: { ...counts, protected: 4 } }, "1"), undefined);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(written).toHaveLength(1);
    // Not ready: at once, the transition time moving with the status.
    now += 1000;
    keeper.follow(api, { status: "False", reason: "NotChained", message: "m" }, undefined);
    await until(() => written.length === 2);
    expect(written[1]).toMatchObject({ type: "MeshcniReady", status: "False", reason: "NotChained" });
    expect(written[1]!.lastTransitionTime).toEqual(new Date(now));
    keeper.stop();
  });

  it("writes the first sweep's summary at once after 'not audited yet', and holds back the next count", async () => {
    const now = 1_000_000;
    const { api, written } = conditionApi();
    const keeper = new ConditionKeeper(memoryLogger([]), () => now);
    keeper.follow(api, nodeCondition(ready, undefined, "1"), shown);
    await until(() => written.length === 1);
    expect(written[0]!.message).toMatch(/meshed pods not audited yet$/);
    keeper.follow(api, nodeCondition(ready, sweeps, "1"), undefined);
    await until(() => written.length === 2);
    expect(written[1]!.message).toMatch(/; 4 meshed pods: 3 protected, 1 adopted$/);
    keeper.follow(api, nodeCondition(ready, { ...sweeps, counts: { ...counts, protected: 4 } }, "1"), undefined);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(written).toHaveLength(2);
    keeper.stop();
  });

  it("keeps the transition time of a status that holds, and writes nothing when the Node already says it (an agent restarted)", async () => {
    const { api, written } = conditionApi();
    const keeper = new ConditionKeeper(memoryLogger([]), () => 2_000_000);
    const state = nodeCondition(ready, sweeps, "1");
    const since = "2026-11-25T10:00:00Z";
    const node = (condition: Partial<V1NodeCondition>): V1Node => ({
      metadata: { uid: "uid-n1" },
      status: { conditions: [{ type: "MeshcniReady", lastTransitionTime: since as never, ...condition } as V1NodeCondition] },
    });
    keeper.follow(api, state, node(state));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(written).toHaveLength(0);
    // A Node registered anew: no condition, written again.
    keeper.follow(api, state, { metadata: { uid: "uid-n1-again" }, status: { conditions: [] } });
    await until(() => written.length === 1);
    const keeper2 = new ConditionKeeper(memoryLogger([]), () => 2_000_000);
    keeper2.follow(api, { ...state, reason: "PodsUnprotected" }, node(state));
    await until(() => written.length === 2);
    expect(written[1]!.lastTransitionTime).toBe(since);
  });

  it("retries a failed write, says so once and again when it works", async () => {
    let failing = true;
    const logs: LogEntry[] = [];
    const { api, written } = conditionApi(() => failing);
    let now = 0;
    const keeper = new ConditionKeeper(memoryLogger(logs), () => now, 100);
    keeper.follow(api, nodeCondition(ready, sweeps, "1"), shown);
    await until(() => logs.some((line) => line.level === "warn"));
    failing = false;
    now += 10_000;
    await until(() => written.length === 1);
    expect(logs.filter((line) => line.level !== "debug").map((line) => line.message)).toEqual([
      "cannot write the node's MeshcniReady condition; retrying",
      "the node's MeshcniReady condition is written again",
    ]);
    keeper.stop();
  });
});
