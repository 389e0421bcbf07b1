import { type FSWatcher, readdirSync, statSync, watch } from "node:fs";
import { join } from "node:path";
import { errnoCode, errorMessage } from "../errors.js";
import type { Logger } from "../log.js";
import { everyTick } from "./ticks.js";

/**
 * fs.watch under Bun (1.4) on Linux loses events, e.g. a delete right after a rename
 * over the same name (oven-sh/bun#24875, #36328 are of the same family: 1 burst in 200
 * here). A stat signature of every watched dir, taken this often on one timer, catches what
 * the watcher drops. Each wake costs the idle agent: a look every 100 ms was 4 mCPU of its 6
 * (npm run bench agent-idle), one a second for all dirs together well under 1; on the timer
 * the plugin socket's look shares (ticks.ts).
 */
const defaultPollMs = 1000;

/**
 * Names, inodes, sizes, mtimes and ctimes of a dir's entries: changes when any of them does (a file written in place, or its mode).
 * Shallow, the dir's own inode and times and its entries' names: what an entry added, removed or renamed over changes, with
 * no stat of each entry (a bin dir holds dozens of plugins, each a stat a second).
 */
export function dirSignature(dir: string, shallow = false): string {
  try {
    if (shallow) {
      const { ino, mtimeMs, ctimeMs } = statSync(dir);
      return `${ino}:${mtimeMs}:${ctimeMs}|${readdirSync(dir).sort().join("|")}`;
    }
    return readdirSync(dir)
      .sort()
      .map((name) => {
        try {
          const stat = statSync(join(dir, name));
          return `${name}:${stat.ino}:${stat.size}:${stat.mtimeMs}:${stat.ctimeMs}`;
        } catch {
          return `${name}:gone`;
        }
      })
      .join("|");
  } catch (error) {
    return `unreadable:${errnoCode(error)}`;
  }
}

export interface WatchedDir {
  dir: string;
  /** Polled by names and the dir's own times alone (dirSignature's shallow): a change within an entry waits for the watcher or the resync. */
  shallow?: boolean;
  /** Whether an event for this entry name (null: unknown) matters. */
  relevant(name: string | null): boolean;
}

/**
 * Calls `onChange` once for each burst of changes in the watched dirs (fs.watch, backed
 * by a stat poll), at `schedule`'s request, and every resyncMs. `onChange` gets the time
 * of the burst's first event (undefined for a resync or a retry), for latency metrics.
 */
export class DirWatcher {
  private readonly watchers: FSWatcher[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopPolling: (() => void) | undefined;
  private queued: NodeJS.Immediate | undefined;
  private firstEventAt: number | undefined;
  private stopped = false;

  constructor(
    private readonly dirs: WatchedDir[],
    private readonly resyncMs: number,
    private readonly onChange: (eventAt: number | undefined) => void,
    private readonly log: Logger,
    /** How often every dir's stat signature is taken: how late a change the watcher dropped is seen. */
    private readonly pollMs = defaultPollMs,
  ) {}

  /** Watches before the caller's first look, so no write between the two goes unseen. */
  start(): void {
    for (const { dir, relevant } of this.dirs) {
      try {
        const watcher = watch(dir, (event, name) => {
          this.log.debug("watch event", { dir, event, name });
          if (relevant(name ? String(name) : null)) this.schedule(performance.now());
        });
        watcher.on("error", (error) => this.log.error("watch failed", { dir, error: error.message }));
        this.watchers.push(watcher);
      } catch (error) {
        this.log.error("cannot watch, relying on the periodic resync", { dir, error: errorMessage(error) });
      }
    }
    this.timers.add(setInterval(() => this.schedule(), this.resyncMs));
    const signatures = () => this.dirs.map(({ dir, shallow }) => dirSignature(dir, shallow));
    let last = signatures();
    this.stopPolling = everyTick(this.pollMs, () => {
      const now = signatures();
      if (now.some((signature, index) => signature !== last[index])) this.schedule(performance.now());
      last = now;
    });
  }

  stop(): void {
    this.stopped = true;
    for (const watcher of this.watchers) watcher.close();
    for (const timer of this.timers) clearTimeout(timer);
    this.stopPolling?.();
    if (this.queued) clearImmediate(this.queued);
  }

  /** Runs onChange on the next turn of the loop (a burst coalesces into one), or after delayMs. */
  schedule(eventAt?: number, delayMs = 0): void {
    if (this.stopped) return;
    if (eventAt !== undefined) this.firstEventAt ??= eventAt;
    if (delayMs > 0) {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        this.schedule();
      }, delayMs);
      this.timers.add(timer);
      return;
    }
    this.queued ??= setImmediate(() => {
      this.queued = undefined;
      const eventAt = this.firstEventAt;
      this.firstEventAt = undefined;
      this.onChange(eventAt);
    });
  }
}
