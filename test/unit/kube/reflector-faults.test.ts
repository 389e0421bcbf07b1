import { describe, expect, it } from "vitest";
import { until } from "../../kit/common.js";
import { reflectorScene } from "../../kit/kube/reflector-scene.js";

/** The reflector against the in-test API server's faults: broken streams, 410s, restarts, refusals, throttling, a stop mid-watch. */
describe("the reflector, when the API server fails it", () => {
  const s = reflectorScene();
  const { watches, lists, start, annotation } = s;

  it("stops standing for the API a grace after its stream broke, however often the retries fail meanwhile", async () => {
    s.api.addNamespace({ metadata: { name: "shop" } });
    // Back-off from 100 ms: several retries fall within the grace (here 1 s: the watches' timeout), none renews it.
    start({ first: 100, cap: 200 });
    await until(() => s.reflector!.fresh() && watches().length >= 1, 3000);
    const before = s.api.requests.length;
    s.api.faults.set("/api/v1/namespaces", { status: 500 });
    s.api.restart();
    const brokeAt = performance.now();
    await until(() => !s.reflector!.fresh(), 3000);
    expect(performance.now() - brokeAt).toBeLessThan(1500);
    expect(s.api.requests.length - before).toBeGreaterThanOrEqual(3);
    s.api.faults.delete("/api/v1/namespaces");
    await until(() => s.reflector!.fresh(), 3000);
  });

  it("is stale from a 410 on until it has listed again, and lists at once (no back-off)", async () => {
    s.api.addNamespace({ metadata: { name: "shop" } });
    // A relist that waited for the back-off (2 s) would come long after the 0.5 s allowed below.
    start({ first: 2000, cap: 2000 });
    await until(() => s.reflector!.fresh() && watches().length >= 1, 3000);
    // The relist is throttled for a while: the store, missing whatever changed, must not stand for the API meanwhile.
    s.api.throttle = { until: Date.now() + 1500, retryAfterSeconds: 1, path: /^\/api\/v1\/namespaces$/, listsOnly: true };
    const listsBefore = lists().length;
    // The watch running now s.ends at its timeout (1 s); its resume is refused as too old (HTTP 410).
    s.api.watchFaults.set("/api/v1/namespaces", { status: 410 });
    await until(() => s.ends.includes("gone"), 3000);
    s.api.watchFaults.delete("/api/v1/namespaces");
    expect(s.reflector!.fresh()).toBe(false);
    await until(() => lists().length > listsBefore, 500);
    // Throttled, the relist waits as the server asks (and backs off): fresh once it went through.
    await until(() => s.reflector!.fresh(), 6000);
  });

  it("recovers from a restarted server that refuses every token (403) until its authorizer has synced, as kube-apiserver does", async () => {
    s.api.addNamespace({ metadata: { name: "shop" } });
    start();
    await until(() => s.reflector!.fresh() && watches().length >= 1, 3000);
    const restartedAt = performance.now();
    s.api.restart({ authorizationWarmupMs: 800 });
    s.api.addNamespace({ metadata: { name: "after", annotations: { kept: "seen" } } });
    await until(() => s.reflector!.fresh() && annotation("after") === "seen", 6000);
    // It asked while the authorizer refused (its back-off from 200 ms), and did not give up.
    const refused = [...watches(), ...lists()].filter((request) => request.at > restartedAt && request.at < restartedAt + 800);
    expect(refused.length).toBeGreaterThan(0);
  });

  it("says a failing watch once, again at its 10th, 100th and 1000th restart, and once more when it recovers", async () => {
    s.api.addNamespace({ metadata: { name: "shop" } });
    // Back-off of 1 ms: a thousand failures within seconds.
    start({ first: 1, cap: 1 });
    await until(() => s.reflector!.fresh() && watches().length >= 1, 3000);
    const failing = watches().length;
    s.api.watchFaults.set("/api/v1/namespaces", { status: 500 });
    await until(() => watches().length >= failing + 1001, 30_000, 50);
    s.api.watchFaults.delete("/api/v1/namespaces");
    await until(() => s.logs.some((entry) => entry.message === "the watch of namespaces recovered"), 5000);
    const said = s.logs.filter((entry) => entry.level !== "debug" && entry.message.startsWith("the watch of namespaces"));
    expect(said.map((entry) => [entry.message, entry.fields?.restarts])).toEqual([
      ["the watch of namespaces ended early (failed); backing off", 1],
      ["the watch of namespaces keeps failing", 10],
      ["the watch of namespaces keeps failing", 100],
      ["the watch of namespaces keeps failing", 1000],
      ["the watch of namespaces recovered", expect.any(Number)],
    ]);
    expect(said.at(-1)!.fields!.restarts).toBeGreaterThanOrEqual(1000);
  }, 45_000);

  it("honours Retry-After while the server throttles it", async () => {
    s.api.throttle = { until: Date.now() + 2500, retryAfterSeconds: 2, path: /^\/api\/v1\/namespaces$/ };
    start();
    await until(() => s.reflector!.fresh(), 6000);
    const tries = lists().map((request) => request.at);
    expect(tries.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < tries.length; i++) expect(tries[i]! - tries[i - 1]!).toBeGreaterThanOrEqual(1950);
    expect(s.ends.filter((end) => end === "throttled").length).toBe(tries.length - 1);
  });

  it("stops at once, even while its watch waits for headers that never come", async () => {
    start();
    await until(() => s.reflector!.fresh(), 3000);
    s.api.watchFaults.set("/api/v1/namespaces", "hang");
    await until(() => watches().length >= 2, 3000);
    const stopping = performance.now();
    await s.reflector!.stop();
    expect(performance.now() - stopping).toBeLessThan(200);
    s.reflector = undefined;
  });
});
