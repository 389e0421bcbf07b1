import { mkdirSync, mkdtempSync, renameSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { DirWatcher, dirSignature } from "../../../src/agent/watch.js";
import { sleep, until } from "../../kit/common.js";
import { type LogEntry, memoryLogger } from "../../kit/memory-logger.js";

describe("the agent's dir watcher", () => {
  let dir: string;
  let watcher: DirWatcher | undefined;
  let calls: Array<number | undefined>;
  let logs: LogEntry[];
  const watch = (dirs: string[], resyncMs = 60_000) => {
    watcher = new DirWatcher(
      dirs.map((path) => ({ dir: path, relevant: (name) => name === null || name.endsWith(".conflist") })),
      resyncMs,
      (eventAt) => void calls.push(eventAt),
      memoryLogger(logs),
      100,
    );
    watcher.start();
    return watcher;
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "meshcni-watch-"));
    calls = [];
    logs = [];
  });
  afterEach(() => {
    watcher?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("calls back once for a burst of changes, with the time of its first event", async () => {
    watch([dir]);
    const before = performance.now();
    for (const name of ["10-a.conflist", "20-b.conflist", "10-a.conflist"]) writeFileSync(join(dir, name), "{}");
    await until(() => calls.length > 0, 2000);
    await sleep(250);
    // The watcher's burst, and at most the poll's look at the same burst after it.
    expect(calls.length).toBeLessThanOrEqual(2);
    expect(calls[0]).toBeGreaterThanOrEqual(before);
  });

  it("calls back when asked, at once (coalesced) or after a delay, and at every resync without an event time", async () => {
    const running = watch([dir], 150);
    running.schedule();
    running.schedule();
    await until(() => calls.length === 1, 1000);
    const asked = performance.now();
    running.schedule(undefined, 100);
    await until(() => calls.length === 2, 1000);
    expect(performance.now() - asked).toBeGreaterThanOrEqual(95);
    await until(() => calls.length >= 4, 1000);
    expect(calls.every((at) => at === undefined)).toBe(true);
  });

  it("looks at every dir on one timer: a change the watcher did not see, in any of them, is seen by the next look", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval", "setTimeout", "clearTimeout"] });
    try {
      const [first, second] = [join(dir, "first"), join(dir, "second")];
      // Neither exists yet: fs.watch cannot watch them, only the poll sees them come.
      watcher = new DirWatcher(
        [first, second].map((path) => ({ dir: path, relevant: () => true })),
        60_000,
        (eventAt) => void calls.push(eventAt),
        memoryLogger(logs),
        500,
      );
      watcher.start();
      mkdirSync(second);
      await vi.advanceTimersByTimeAsync(499);
      expect(calls).toEqual([]);
      await vi.advanceTimersByTimeAsync(1);
      expect(calls).toHaveLength(1);
      await vi.advanceTimersByTimeAsync(1000);
      expect(calls).toHaveLength(1);
      mkdirSync(first);
      await vi.advanceTimersByTimeAsync(500);
      expect(calls).toHaveLength(2);
      expect(vi.getTimerCount()).toBe(2);
    } finally {
      vi.useRealTimers();
    }
  });

  it("falls back on its poll for a dir it cannot watch, and says so", async () => {
    const later = join(dir, "net.d");
    watch([later]);
    expect(logs.some((entry) => entry.message === "cannot watch, relying on the periodic resync")).toBe(true);
    mkdirSync(later);
    await until(() => calls.length > 0, 1000);
    expect(calls[0]).toBeTypeOf("number");
  });

  it("stops calling back once stopped, even for what was scheduled", async () => {
    vi.useFakeTimers();
    try {
      const running = watch([dir], 50);
      running.schedule(undefined, 30);
      running.schedule();
      running.stop();
      writeFileSync(join(dir, "10-a.conflist"), "{}");
      // Every resync, poll, delay and queued call there could have been.
      await vi.advanceTimersByTimeAsync(10_000);
      expect(calls).toEqual([]);
    } finally {
      vi.useRealTimers();
    }
  });

  it("signs a dir by its entries' names, inodes, sizes and mtimes", () => {
    const empty = dirSignature(dir);
    writeFileSync(join(dir, "a"), "1");
    const one = dirSignature(dir);
    writeFileSync(join(dir, "a"), "22");
    expect(new Set([empty, one, dirSignature(dir)]).size).toBe(3);
    expect(dirSignature(join(dir, "missing"))).toBe("unreadable:ENOENT");
  });

  it("signs a dir shallow by its names and its own inode and times: an entry added, removed or renamed over, not one written in place", () => {
    writeFileSync(join(dir, "bridge"), "1");
    // The dir's times back an hour: the kernel's clock for them is coarse (a few ms), the rename below must move them.
    utimesSync(dir, Date.now() / 1000 - 3600, Date.now() / 1000 - 3600);
    const before = dirSignature(dir, true);
    writeFileSync(join(dir, "bridge"), "22");
    expect(dirSignature(dir, true)).toBe(before);
    writeFileSync(join(dir, "bridge.new"), "333");
    const added = dirSignature(dir, true);
    renameSync(join(dir, "bridge.new"), join(dir, "bridge"));
    const renamed = dirSignature(dir, true);
    expect(new Set([before, added, renamed]).size).toBe(3);
    expect(dirSignature(join(dir, "missing"), true)).toBe("unreadable:ENOENT");
  });
});
