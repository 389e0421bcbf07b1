import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Reflector } from "../../../src/kube/reflector.js";
import { apiSource } from "../../../src/kube/sources.js";
import type { WatchEnd } from "../../../src/kube/watch-ends.js";
import { FakeApiServer } from "../../kit/api-server.js";
import { kubeConfigOf, until } from "../../kit/common.js";
import { type LogEntry, memoryLogger } from "../../kit/fake-node.js";

interface Namespace {
  metadata: { name: string; resourceVersion?: string; annotations?: Record<string, string> };
}

/**
 * The reflector against the in-test API server, as a real one behaves: its requests, its
 * back-off, its freshness and what it logs, over the real transport. Watches here ask for
 * timeoutSeconds of 1 (so they end, and go silent, within seconds) and back off from 200 ms.
 */
describe("the reflector", () => {
  let api: FakeApiServer;
  let logs: LogEntry[];
  let ends: WatchEnd[];
  let reflector: Reflector<Namespace> | undefined;
  const watches = () => api.requests.filter((request) => request.path === "/api/v1/namespaces" && request.query.watch === "true");
  const lists = () => api.requests.filter((request) => request.path === "/api/v1/namespaces" && request.query.watch === undefined);

  const start = (backoffMs = { first: 200, cap: 2000 }, watchTimeoutSeconds = 1) => {
    const config = kubeConfigOf(api.writeAgentKubeconfig());
    reflector = new Reflector<Namespace>(
      apiSource<Namespace>({
        name: "namespaces",
        config: () => config,
        path: "/api/v1/namespaces",
        query: {},
        // Keeps the name, the version and one annotation: nothing else reaches the store.
        transform: (object) => {
          const { name, resourceVersion, annotations } = (object as Namespace).metadata;
          const kept = annotations?.kept;
          return { metadata: { name, ...(resourceVersion ? { resourceVersion } : {}), ...(kept ? { annotations: { kept } } : {}) } };
        },
        key: (namespace) => namespace.metadata.name,
      }),
      { watchTimeoutSeconds, backoffMs, now: () => performance.now(), random: () => 0 },
      memoryLogger(logs),
      { ended: (end) => void ends.push(end) },
    );
    reflector.start();
    return reflector;
  };
  const annotation = (name: string) => reflector!.get(name)?.metadata.annotations?.kept;

  beforeEach(async () => {
    api = await new FakeApiServer().start();
    api.watches.bookmarkIntervalMs = 300;
    logs = [];
    ends = [];
  });
  afterEach(async () => {
    await reflector?.stop();
    reflector = undefined;
    await api.stop();
  });

  it("lists in pages, keeps only what the transform keeps, and watches bounded, bookmarked, from the list's version", async () => {
    for (let i = 0; i < 1200; i++) api.addNamespace({ metadata: { name: `ns-${i}`, annotations: { kept: `${i}`, big: "x".repeat(100) } } });
    start();
    await until(() => reflector!.fresh(), 5000);
    expect(lists().map((request) => request.query.limit)).toEqual(["250", "250", "250", "250", "250"]);
    expect(reflector!.values()).toHaveLength(1200);
    expect(reflector!.get("ns-7")).toEqual({ metadata: { name: "ns-7", resourceVersion: expect.any(String), annotations: { kept: "7" } } });
    await until(() => watches().length > 0, 2000);
    expect(watches()[0]!.query).toMatchObject({
      timeoutSeconds: "1",
      allowWatchBookmarks: "true",
      // The version the list answered with: the server's when it listed, the last namespace's.
      resourceVersion: api.namespaces.get("ns-1199")!.metadata!.resourceVersion,
    });
    api.addNamespace({ metadata: { name: "late", annotations: { kept: "yes" } } });
    await until(() => annotation("late") === "yes", 2000);
  });

  it("runs watch after watch on a quiet server: each ends after its timeout, resumes from the bookmarks' version, never relists, says nothing", async () => {
    api.addNamespace({ metadata: { name: "shop" } });
    start();
    await until(() => watches().length >= 4, 8000);
    expect(lists()).toHaveLength(1);
    expect(new Set(ends)).toEqual(new Set(["expired"]));
    expect(logs.filter((entry) => entry.level !== "debug")).toEqual([]);
    expect(reflector!.fresh()).toBe(true);
  });

  it.each([
    ["an ERROR event (500) and the end", { error: 500 } as const, "error"],
    ["a 200 and the end at once", "close" as const, "closed"],
  ])("backs off when every watch gets %s, logs it once, and recovers", async (_what, fault, cause) => {
    api.watchFaults.set("/api/v1/namespaces", fault);
    start();
    await until(() => watches().length >= 5, 10_000);
    // Back-off from 200 ms doubling to 2 s (no jitter here): not thousands of watches.
    const gaps = watches()
      .slice(1, 5)
      .map((watch, i) => watch.at - watches()[i]!.at);
    for (const [i, gap] of gaps.entries()) expect(gap, `wait ${i + 1}`).toBeGreaterThanOrEqual(190 * 2 ** i);
    expect(ends.every((end) => end === cause)).toBe(true);
    expect(logs.filter((entry) => entry.level === "warn").map((entry) => entry.message)).toEqual([
      `the watch of namespaces ended early (${cause}); backing off`,
    ]);
    api.watchFaults.delete("/api/v1/namespaces");
    await until(() => logs.some((entry) => entry.message === "the watch of namespaces recovered"), 6000);
    api.addNamespace({ metadata: { name: "after", annotations: { kept: "1" } } });
    await until(() => annotation("after") === "1", 3000);
  });

  it("takes a silent watch for dead after its time and a margin, and stops standing for the API long before", async () => {
    api.addNamespace({ metadata: { name: "shop", annotations: { kept: "old" } } });
    start();
    await until(() => reflector!.fresh() && watches().length === 1, 3000);
    api.watchFaults.set("/api/v1/namespaces", "silent");
    // The next watch (after this one's timeout) hears nothing at all.
    await until(() => watches().length === 2, 3000);
    await until(() => !reflector!.fresh(), 3000);
    await until(() => ends.includes("silent"), 4000);
    api.watchFaults.delete("/api/v1/namespaces");
    api.addNamespace({ metadata: { name: "shop", annotations: { kept: "new" } } });
    await until(() => reflector!.fresh() && annotation("shop") === "new", 5000);
  });

  it("takes a watch that had bookmarks and then went quiet for dead once its bookmarks are overdue, not at the watch's own end", async () => {
    api.addNamespace({ metadata: { name: "shop" } });
    // Watches of 6 s (each asks 6 s: random is 0): dead silence is taken after 6 + 3 s, overdue bookmarks after 6 s.
    start(undefined, 6);
    await until(() => reflector!.fresh() && watches().length === 1, 3000);
    await until(() => api.watches.bookmarksSent >= 1, 3000); // a bookmark (every 300 ms)
    const quietAt = performance.now();
    api.watches.goSilent();
    await until(() => ends.includes("silent"), 10_000, 20);
    expect(performance.now() - quietAt).toBeLessThan(7500);
    expect(logs.filter((entry) => entry.message.includes("ended early (silent)"))).toHaveLength(1);
    await until(() => watches().length === 2, 3000);
  }, 20_000);

  it("relists after 410 Gone (a restarted server's new window), losing no change", async () => {
    api.addNamespace({ metadata: { name: "shop" } });
    start();
    await until(() => reflector!.fresh() && watches().length >= 1, 3000);
    api.restart();
    api.addNamespace({ metadata: { name: "during", annotations: { kept: "seen" } } });
    await until(() => annotation("during") === "seen", 5000);
    expect(ends).toContain("gone");
    expect(lists().length).toBe(2);
  });

  it("stops standing for the API a grace after its stream broke, however often the retries fail meanwhile", async () => {
    api.addNamespace({ metadata: { name: "shop" } });
    // Back-off from 100 ms: several retries fall within the grace (here 1 s: the watches' timeout), none renews it.
    start({ first: 100, cap: 200 });
    await until(() => reflector!.fresh() && watches().length >= 1, 3000);
    const before = api.requests.length;
    api.faults.set("/api/v1/namespaces", { status: 500 });
    api.restart();
    const brokeAt = performance.now();
    await until(() => !reflector!.fresh(), 3000);
    expect(performance.now() - brokeAt).toBeLessThan(1500);
    expect(api.requests.length - before).toBeGreaterThanOrEqual(3);
    api.faults.delete("/api/v1/namespaces");
    await until(() => reflector!.fresh(), 3000);
  });

  it("is stale from a 410 on until it has listed again, and lists at once (no back-off)", async () => {
    api.addNamespace({ metadata: { name: "shop" } });
    // A relist that waited for the back-off (2 s) would come long after the 0.5 s allowed below.
    start({ first: 2000, cap: 2000 });
    await until(() => reflector!.fresh() && watches().length >= 1, 3000);
    // The relist is throttled for a while: the store, missing whatever changed, must not stand for the API meanwhile.
    api.throttle = { until: Date.now() + 1500, retryAfterSeconds: 1, path: /^\/api\/v1\/namespaces$/, listsOnly: true };
    const listsBefore = lists().length;
    // The watch running now ends at its timeout (1 s); its resume is refused as too old (HTTP 410).
    api.watchFaults.set("/api/v1/namespaces", { status: 410 });
    await until(() => ends.includes("gone"), 3000);
    api.watchFaults.delete("/api/v1/namespaces");
    expect(reflector!.fresh()).toBe(false);
    await until(() => lists().length > listsBefore, 500);
    // Throttled, the relist waits as the server asks (and backs off): fresh once it went through.
    await until(() => reflector!.fresh(), 6000);
  });

  it("recovers from a restarted server that refuses every token (403) until its authorizer has synced, as kube-apiserver does", async () => {
    api.addNamespace({ metadata: { name: "shop" } });
    start();
    await until(() => reflector!.fresh() && watches().length >= 1, 3000);
    const restartedAt = performance.now();
    api.restart({ authorizationWarmupMs: 800 });
    api.addNamespace({ metadata: { name: "after", annotations: { kept: "seen" } } });
    await until(() => reflector!.fresh() && annotation("after") === "seen", 6000);
    // It asked while the authorizer refused (its back-off from 200 ms), and did not give up.
    const refused = [...watches(), ...lists()].filter((request) => request.at > restartedAt && request.at < restartedAt + 800);
    expect(refused.length).toBeGreaterThan(0);
  });

  it("says a failing watch once, again at its 10th, 100th and 1000th restart, and once more when it recovers", async () => {
    api.addNamespace({ metadata: { name: "shop" } });
    // Back-off of 1 ms: a thousand failures within seconds.
    start({ first: 1, cap: 1 });
    await until(() => reflector!.fresh() && watches().length >= 1, 3000);
    const failing = watches().length;
    api.watchFaults.set("/api/v1/namespaces", { status: 500 });
    await until(() => watches().length >= failing + 1001, 30_000, 50);
    api.watchFaults.delete("/api/v1/namespaces");
    await until(() => logs.some((entry) => entry.message === "the watch of namespaces recovered"), 5000);
    const said = logs.filter((entry) => entry.level !== "debug" && entry.message.startsWith("the watch of namespaces"));
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
    api.throttle = { until: Date.now() + 2500, retryAfterSeconds: 2, path: /^\/api\/v1\/namespaces$/ };
    start();
    await until(() => reflector!.fresh(), 6000);
    const tries = lists().map((request) => request.at);
    expect(tries.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < tries.length; i++) expect(tries[i]! - tries[i - 1]!).toBeGreaterThanOrEqual(1950);
    expect(ends.filter((end) => end === "throttled").length).toBe(tries.length - 1);
  });

  it("stops at once, even while its watch waits for headers that never come", async () => {
    start();
    await until(() => reflector!.fresh(), 3000);
    api.watchFaults.set("/api/v1/namespaces", "hang");
    await until(() => watches().length >= 2, 3000);
    const stopping = performance.now();
    await reflector!.stop();
    expect(performance.now() - stopping).toBeLessThan(200);
    reflector = undefined;
  });
});
