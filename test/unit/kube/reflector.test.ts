import { describe, expect, it } from "vitest";
import { sleep, until } from "../../kit/common.js";
import { reflectorScene } from "../../kit/kube/reflector-scene.js";

/**
 * The reflector against the in-test API server, as a real one behaves: its requests, its
 * back-off, its freshness and what it logs, over the real transport. Watches here ask for
 * timeoutSeconds of 1 (so they end, and go silent, within seconds) and back off from 200 ms.
 */
describe("the reflector", () => {
  const s = reflectorScene();
  const { watches, lists, start, annotation } = s;

  it("lists in pages, keeps only what the transform keeps, and watches bounded, bookmarked, from the list's version", async () => {
    for (let i = 0; i < 1200; i++)
      s.api.addNamespace({ metadata: { name: `ns-${i}`, annotations: { kept: `${i}`, big: "x".repeat(100) } } });
    start();
    await until(() => s.reflector!.fresh(), 5000);
    expect(lists().map((request) => request.query.limit)).toEqual(["250", "250", "250", "250", "250"]);
    expect(s.reflector!.values()).toHaveLength(1200);
    expect(s.reflector!.get("ns-7")).toEqual({
      metadata: { name: "ns-7", resourceVersion: expect.any(String), annotations: { kept: "7" } },
    });
    await until(() => watches().length > 0, 2000);
    expect(watches()[0]!.query).toMatchObject({
      timeoutSeconds: "1",
      allowWatchBookmarks: "true",
      // The version the list answered with: the server's when it listed, the last namespace's.
      resourceVersion: s.api.namespaces.get("ns-1199")!.metadata!.resourceVersion,
    });
    s.api.addNamespace({ metadata: { name: "late", annotations: { kept: "yes" } } });
    await until(() => annotation("late") === "yes", 2000);
  });

  it("runs watch after watch on a quiet server: each s.ends after its timeout, resumes from the bookmarks' version, never relists, says nothing", async () => {
    s.api.addNamespace({ metadata: { name: "shop" } });
    start();
    await until(() => watches().length >= 4, 8000);
    expect(lists()).toHaveLength(1);
    expect(new Set(s.ends)).toEqual(new Set(["expired"]));
    expect(s.logs.filter((entry) => entry.level !== "debug")).toEqual([]);
    expect(s.reflector!.fresh()).toBe(true);
  });

  it.each([
    ["an ERROR event (500) and the end", { error: 500 } as const, "error"],
    ["a 200 and the end at once", "close" as const, "closed"],
  ])("backs off when every watch gets %s, s.logs it once, and recovers", async (_what, fault, cause) => {
    s.api.watchFaults.set("/api/v1/namespaces", fault);
    start();
    await until(() => watches().length >= 5, 10_000);
    // Back-off from 200 ms doubling to 2 s (no jitter here): not thousands of watches.
    const gaps = watches()
      .slice(1, 5)
      .map((watch, i) => watch.at - watches()[i]!.at);
    for (const [i, gap] of gaps.entries()) expect(gap, `wait ${i + 1}`).toBeGreaterThanOrEqual(190 * 2 ** i);
    expect(s.ends.every((end) => end === cause)).toBe(true);
    expect(s.logs.filter((entry) => entry.level === "warn").map((entry) => entry.message)).toEqual([
      `the watch of namespaces ended early (${cause}); backing off`,
    ]);
    s.api.watchFaults.delete("/api/v1/namespaces");
    await until(() => s.logs.some((entry) => entry.message === "the watch of namespaces recovered"), 6000);
    s.api.addNamespace({ metadata: { name: "after", annotations: { kept: "1" } } });
    await until(() => annotation("after") === "1", 3000);
  });

  it("takes a silent watch for dead after its time and a margin, and stops standing for the API long before", async () => {
    s.api.addNamespace({ metadata: { name: "shop", annotations: { kept: "old" } } });
    start();
    await until(() => s.reflector!.fresh() && watches().length === 1, 3000);
    s.api.watchFaults.set("/api/v1/namespaces", "silent");
    // The next watch (after this one's timeout) hears nothing at all.
    await until(() => watches().length === 2, 3000);
    await until(() => !s.reflector!.fresh(), 3000);
    await until(() => s.ends.includes("silent"), 4000);
    // The watches after it are answered (their headers) and silent too: none makes the store stand for the API again.
    const silentSoFar = watches().length;
    while (watches().length < silentSoFar + 2) {
      expect(s.reflector!.fresh()).toBe(false);
      await sleep(20);
    }
    s.api.watchFaults.delete("/api/v1/namespaces");
    s.api.addNamespace({ metadata: { name: "shop", annotations: { kept: "new" } } });
    await until(() => s.reflector!.fresh() && annotation("shop") === "new", 5000);
  });

  it("takes a watch that had bookmarks and then went quiet for dead once its bookmarks are overdue, not at the watch's own end", async () => {
    s.api.addNamespace({ metadata: { name: "shop" } });
    // Watches of 6 s (each asks 6 s: random is 0): dead silence is taken after 6 + 3 s, overdue bookmarks after 6 s.
    start(undefined, 6);
    await until(() => s.reflector!.fresh() && watches().length === 1, 3000);
    await until(() => s.api.watches.bookmarksSent >= 1, 3000); // a bookmark (every 300 ms)
    const quietAt = performance.now();
    s.api.watches.goSilent();
    await until(() => s.ends.includes("silent"), 10_000, 20);
    expect(performance.now() - quietAt).toBeLessThan(7500);
    expect(s.logs.filter((entry) => entry.message.includes("ended early (silent)"))).toHaveLength(1);
    await until(() => watches().length === 2, 3000);
  }, 20_000);

  // Watches of 6 s (random is 0): silence before any bookmark is taken for dead after 6 + 3 s; once the server is known to send them, after 6 s.
  /** From when the `nth` watch is opened (silent: the fault is set) to its end as silent. */
  async function silentFor(nth: number): Promise<number> {
    await until(() => watches().length === nth, 8000, 20);
    const from = performance.now();
    await until(() => s.ends.includes("silent"), 12_000, 20);
    return performance.now() - from;
  }

  it("takes a watch silent from its start for dead at the staleness bound once an earlier watch had bookmarks", async () => {
    s.api.addNamespace({ metadata: { name: "shop" } });
    start(undefined, 6);
    await until(() => s.api.watches.bookmarksSent >= 1, 3000);
    s.api.watchFaults.set("/api/v1/namespaces", "silent");
    expect(await silentFor(2)).toBeLessThan(7500);
  }, 25_000);

  it("takes its first watch, silent from its start, for dead at the staleness bound when another reflector of the server had bookmarks", async () => {
    s.api.watchFaults.set("/api/v1/namespaces", "silent");
    start(undefined, 6, { seen: true });
    expect(await silentFor(1)).toBeLessThan(7500);
  }, 25_000);

  it("keeps a watch silent from its start until its own end and a margin while no bookmark was ever seen (the server may send none)", async () => {
    s.api.watchFaults.set("/api/v1/namespaces", "silent");
    start(undefined, 6);
    expect(await silentFor(1)).toBeGreaterThan(8500);
  }, 25_000);

  it("relists after 410 Gone (a restarted server's new window), losing no change", async () => {
    s.api.addNamespace({ metadata: { name: "shop" } });
    start();
    await until(() => s.reflector!.fresh() && watches().length >= 1, 3000);
    s.api.restart();
    s.api.addNamespace({ metadata: { name: "during", annotations: { kept: "seen" } } });
    await until(() => annotation("during") === "seen", 5000);
    expect(s.ends).toContain("gone");
    expect(lists().length).toBe(2);
  });
});
