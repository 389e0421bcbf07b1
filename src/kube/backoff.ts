/**
 * Exponential back-off with jitter, as client-go's reflector backs off: from initialMs,
 * doubling at each failure up to capMs, each delay stretched by up to as much again at
 * random so nodes that failed together do not retry together. A server's Retry-After is a
 * floor. Pure: the randomness is passed in.
 */
export class Backoff {
  private attempt = 0;

  constructor(
    private readonly initialMs = 1000,
    private readonly capMs = 30_000,
    private readonly random: () => number = Math.random,
  ) {}

  /** The delay before the next try, and counts a failure; at least retryAfterMs when the server asked for it. */
  next(retryAfterMs = 0): number {
    const base = Math.min(this.capMs, this.initialMs * 2 ** this.attempt);
    this.attempt = Math.min(this.attempt + 1, 30);
    return Math.max(retryAfterMs, Math.min(this.capMs, base * (1 + this.random())));
  }

  /** After a success: the next failure waits initialMs again. */
  reset(): void {
    this.attempt = 0;
  }
}

/** Waits, or less when `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done);
  });
}
