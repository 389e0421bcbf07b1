import type { Logger } from "../log.js";
import { Backoff, sleep } from "./backoff.js";
import { listAll } from "./list-pages.js";
import type { WatchEvent } from "./transport.js";
import {
  EndedError,
  endOf,
  errorEventEnd,
  logEarlyEnd,
  maxDownMs,
  maxStaleMs,
  type ReflectorSource,
  type ReflectorTiming,
  SilenceDeadline,
  type WatchEnd,
} from "./watch-ends.js";

/**
 * A cache of one kind of object kept current by list and watch, as client-go's reflector
 * keeps a store: every watch bounded (timeoutSeconds), bookmarked, resumed from the last
 * resourceVersion seen; any early end backed off with jitter (reset after a watch that ran
 * its time), Retry-After honoured, a 410 relisted at once; a watch silent past its deadline
 * torn down. It knows its freshness, says once when it fails and when it recovers, and its
 * stop aborts whatever is in flight.
 */
export class Reflector<T> {
  private readonly store = new Map<string, T & { metadata?: { resourceVersion?: string } }>();
  private resourceVersion = "";
  private synced = false;
  private connected = false;
  /** Listed or watching since the stream last broke: only a break of a whole stream sets downSince (retries never do). */
  private whole = false;
  private lastHeardAt = Number.NEGATIVE_INFINITY;
  /** The last watch ended silent: the next one's headers prove nothing, only an event or a bookmark does. */
  private unproven = false;
  private downSince = Number.NEGATIVE_INFINITY;
  private failures = 0;
  private readonly stopping = new AbortController();
  private running: Promise<void> | undefined;
  private readonly backoff: Backoff;
  private readonly bookmarks: { seen: boolean };

  constructor(
    private readonly source: ReflectorSource<T>,
    private readonly timing: ReflectorTiming,
    private readonly log: Logger,
    private readonly hooks: { change?(object: T): void; remove?(object: T): void; ended?(end: WatchEnd): void } = {},
  ) {
    this.backoff = new Backoff(timing.backoffMs?.first ?? 1000, timing.backoffMs?.cap ?? 30_000, timing.random);
    this.bookmarks = timing.bookmarks ?? { seen: false };
  }

  start(): void {
    this.running ??= this.loop();
  }

  /** Aborts every request in flight and returns once the loop has ended. */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.running;
  }

  get(key: string): T | undefined {
    return this.store.get(key);
  }

  values(): T[] {
    return [...this.store.values()];
  }

  /**
   * Whether the store can stand for the API: listed (again, after a 410), and its watch up and heard from
   * (an event, a bookmark) within 90 s (less with a shorter watch timeout), or broken for less than 5 s.
   */
  fresh(): boolean {
    const now = this.timing.now();
    if (!this.synced || !this.resourceVersion) return false;
    return this.connected ? now - this.lastHeardAt < this.staleAfterMs() : now - this.downSince < Math.min(maxDownMs, this.staleAfterMs());
  }

  /** Seconds since the store last heard from the server (a list, the watch's headers, an event or a bookmark). */
  ageSeconds(): number {
    return this.synced ? (this.timing.now() - this.lastHeardAt) / 1000 : Number.POSITIVE_INFINITY;
  }

  private staleAfterMs(): number {
    return Math.min(maxStaleMs, this.timing.watchTimeoutSeconds * 1000);
  }

  private async loop(): Promise<void> {
    const signal = this.stopping.signal;
    let goneInARow = 0;
    while (!signal.aborted) {
      const timeoutSeconds = Math.floor(this.timing.watchTimeoutSeconds * (1 + this.timing.random()));
      const started = this.timing.now();
      let end: EndedError;
      try {
        if (!this.resourceVersion) await this.relist(signal);
        end = await this.watchOnce(timeoutSeconds, signal);
      } catch (error) {
        if (signal.aborted) break;
        end = endOf(error);
      } finally {
        this.connected = false;
        if (this.whole) this.downSince = this.timing.now();
        this.whole = false;
      }
      // A silent stream was down from when it was last heard, not from when that was noticed.
      if (end.end === "silent") {
        this.unproven = true;
        this.downSince = Math.min(this.downSince, this.lastHeardAt);
      }
      // Stale from a 410 on (no resourceVersion), relisted at once; a second 410 in a row backs off as a failed list does.
      if (end.end === "gone") this.resourceVersion = "";
      goneInARow = end.end === "gone" ? goneInARow + 1 : 0;
      if (goneInARow === 1) {
        this.hooks.ended?.("gone");
        continue;
      }
      // A watch that ran (most of) its time is how watches end: the next starts at once.
      const lasted = this.timing.now() - started >= Math.min(30_000, timeoutSeconds * 900);
      this.hooks.ended?.(lasted && end.end === "closed" ? "expired" : end.end);
      if (lasted) {
        this.backoff.reset();
        if (this.failures > 0) this.log.info(`the watch of ${this.source.name} recovered`, { restarts: this.failures });
        this.failures = 0;
        if (end.end === "closed") continue;
      }
      const delayMs = this.backoff.next(end.retryAfterMs);
      logEarlyEnd(this.log, this.source.name, ++this.failures, end, delayMs);
      await sleep(delayMs, signal);
    }
  }

  /** Lists in pages, each transformed as it comes, then replaces the store: what is gone is removed, what changed is told. */
  private async relist(signal: AbortSignal): Promise<void> {
    const { listed, resourceVersion } = await listAll(this.source, signal);
    for (const [key, object] of this.store) if (!listed.has(key)) this.remove(key, object);
    for (const object of listed.values()) this.put(object);
    this.resourceVersion = resourceVersion;
    this.synced = true;
    this.whole = true;
    this.unproven = false;
    this.lastHeardAt = this.timing.now();
  }

  /** One watch from the last resourceVersion: how it ended (resolves with the end; a failed request rejects). */
  private async watchOnce(timeoutSeconds: number, signal: AbortSignal): Promise<EndedError> {
    const watch = new AbortController();
    const stop = () => watch.abort();
    signal.addEventListener("abort", stop);
    // Dead: nothing heard for the watch's time and a margin, or (the server sends bookmarks) past the staleness bound.
    const untilItsEndMs = timeoutSeconds * 1000 + Math.min(30_000, timeoutSeconds * 500);
    const silence = new SilenceDeadline(this.bookmarks.seen ? Math.min(untilItsEndMs, this.staleAfterMs()) : untilItsEndMs, stop);
    const heard = () => {
      this.lastHeardAt = this.timing.now();
      silence.arm();
    };
    let ended: EndedError = new EndedError("closed", "the server ended the watch");
    try {
      silence.arm();
      await this.source.watch(
        { resourceVersion: this.resourceVersion, timeoutSeconds },
        watch.signal,
        (event) => {
          if (event.type === "BOOKMARK") {
            this.bookmarks.seen = true;
            silence.tighten(this.staleAfterMs());
          }
          this.unproven = false;
          heard();
          const failure = this.apply(event);
          if (failure) {
            ended = failure;
            watch.abort();
          }
        },
        () => {
          this.connected = true;
          this.whole = true;
          if (this.unproven) silence.arm();
          else heard();
        },
      );
    } catch (error) {
      if (signal.aborted) throw error;
      if (silence.fired) return new EndedError("silent", `nothing from the server for ${Math.round(silence.ms / 1000)} s`);
      if (!watch.signal.aborted) throw error;
    } finally {
      silence.clear();
      signal.removeEventListener("abort", stop);
    }
    return ended;
  }

  /** Applies one event to the store; an ERROR event ends the watch (its Status says how). */
  private apply(event: WatchEvent): EndedError | undefined {
    if (event.type === "ERROR") return errorEventEnd(event.object);
    const version = event.object.metadata?.resourceVersion;
    if (version) this.resourceVersion = version;
    if (event.type === "BOOKMARK") return undefined;
    const object = this.source.transform(event.object);
    const key = this.source.key(object);
    if (event.type === "DELETED") this.remove(key, this.store.get(key) ?? object);
    else this.put(object);
    return undefined;
  }

  private put(object: T & { metadata?: { resourceVersion?: string } }): void {
    const key = this.source.key(object);
    const held = this.store.get(key);
    this.store.set(key, object);
    const version = object.metadata?.resourceVersion;
    if (!held || version === undefined || held.metadata?.resourceVersion !== version) this.hooks.change?.(object);
  }

  private remove(key: string, object: T): void {
    if (this.store.delete(key)) this.hooks.remove?.(object);
  }
}
