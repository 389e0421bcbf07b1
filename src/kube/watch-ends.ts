import { errorMessage } from "../errors.js";
import type { Logger } from "../log.js";
import { ApiStatusError } from "./errors.js";
import type { WatchEvent } from "./transport.js";

/** One page of a list: the items as the server sent them, its resourceVersion, the token for the next page. */
export interface ListPage {
  items: unknown[];
  resourceVersion: string;
  continue: string | undefined;
}

/** Where a reflector's objects come from: a paged list and a watch of one kind, and what to keep of each object. */
export interface ReflectorSource<T> {
  /** What it watches, for logs and metrics: "pods", "namespaces", "node". */
  name: string;
  list(page: { limit: number; continue: string | undefined }, signal: AbortSignal): Promise<ListPage>;
  /** Resolves when the server ends the watch, rejects when it fails; `onHeaders` when the server accepted it. */
  watch(
    query: { resourceVersion: string; timeoutSeconds: number },
    signal: AbortSignal,
    onEvent: (event: WatchEvent) => void,
    onHeaders: () => void,
  ): Promise<void>;
  /** Only what meshcni reads of an object (client-go's transform): the store holds nothing else. */
  transform(object: unknown): T & { metadata?: { resourceVersion?: string } };
  key(object: T): string;
}

/**
 * Why a watch ended: it ran its time (expired); the server ended it early (closed), sent an
 * ERROR event (error), said the resourceVersion is too old (gone); it went silent past its
 * deadline (silent); the server throttled (429) or failed the request (failed).
 */
export type WatchEnd = "expired" | "closed" | "error" | "gone" | "silent" | "throttled" | "failed";

export interface ReflectorTiming {
  /** Each watch asks for a timeoutSeconds in [this, 2 × this), as client-go does (its 5 minutes). */
  watchTimeoutSeconds: number;
  /** The back-off after an early end: from the first delay, doubling to the cap (1 s to 30 s). */
  backoffMs?: { first: number; cap: number };
  now(): number;
  random(): number;
  /**
   * Shared by the reflectors of one API server: set once any of their watches has had a
   * bookmark. The server sends them (about once a minute), so every watch from then on,
   * before its own first, is taken for dead after the staleness bound, not its own end.
   */
  bookmarks?: { seen: boolean };
}

/** The server sends a bookmark about once a minute: silence longer than this means the cache may be behind. */
export const maxStaleMs = 90_000;
/** A stream broken longer than this: changes may be missed until it is back. */
export const maxDownMs = 5000;

/** A watch's end, as the reflector's loop reads it. */
export class EndedError extends Error {
  constructor(
    readonly end: WatchEnd,
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

/** How a failed list or watch request counts: throttled (429, with its Retry-After), gone (410), failed (anything else). */
export function endOf(error: unknown): EndedError {
  const code = error instanceof ApiStatusError ? error.code : (error as { code?: unknown } | null)?.code;
  const retryAfter = error instanceof ApiStatusError ? error.retryAfterMs : undefined;
  if (code === 429) return new EndedError("throttled", errorMessage(error), retryAfter);
  if (code === 410) return new EndedError("gone", errorMessage(error));
  return new EndedError("failed", errorMessage(error), retryAfter);
}

/** Logs the first early end of a run of them, then the 10th, 100th, 1000th…, each with the count and the back-off. */
export function logEarlyEnd(log: Logger, watch: string, failures: number, end: EndedError, delayMs: number): void {
  const fields = { cause: end.end, reason: end.message, restarts: failures, retryInSeconds: Math.round(delayMs / 100) / 10 };
  if (failures === 1) log.warn(`the watch of ${watch} ended early (${end.end}); backing off`, fields);
  else if (Number.isInteger(Math.log10(failures))) log.warn(`the watch of ${watch} keeps failing`, fields);
  else log.debug(`the watch of ${watch} ended early (${end.end})`, fields);
}

/** How an ERROR event ends a watch: 410, the resourceVersion too old (gone); any other code (error). */
export function errorEventEnd(status: { code?: number; message?: string }): EndedError {
  return status.code === 410
    ? new EndedError("gone", status.message ?? "the resourceVersion is too old")
    : new EndedError("error", `ERROR event ${status.code ?? ""}: ${status.message ?? "no message"}`);
}

/** A watch's deadline for silence, armed again by whatever is heard; past it, `expire` tears the watch down. */
export class SilenceDeadline {
  fired = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    public ms: number,
    private readonly expire: () => void,
  ) {}

  arm(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.fired = true;
      this.expire();
    }, this.ms);
  }

  /** At most `ms` from the next arm on (the server sends bookmarks: silence this long means the watch is dead). */
  tighten(ms: number): void {
    this.ms = Math.min(this.ms, ms);
  }

  clear(): void {
    clearTimeout(this.timer);
  }
}
