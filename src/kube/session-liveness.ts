import type { ClientHttp2Session } from "node:http2";

/** client-go's HTTP/2 health check: a connection that read nothing this long is pinged, and dropped when the ping is not answered in time. */
export const livenessTiming = { readIdleMs: 30_000, pingTimeoutMs: 15_000 };

/**
 * Whether an HTTP/2 connection to the API server still carries answers, as client-go's
 * transport checks (ReadIdleTimeout, PingTimeout): while streams are open on it and it has
 * read nothing for `readIdleMs`, a PING; no answer in `pingTimeoutMs`, and the connection is
 * destroyed with every stream on it, which then fail and are retried on a new one. A half-open
 * connection (a server gone without a reset) would otherwise hold every watch and every request
 * sent on it. Only reads count: a client that keeps sending learns nothing from its own sends.
 * While no stream is open it neither wakes nor holds the process.
 */
export class SessionLiveness {
  private open = 0;
  private lastRead: number;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly session: ClientHttp2Session,
    private readonly timing = livenessTiming,
    private readonly now = () => performance.now(),
  ) {
    this.lastRead = now();
  }

  /** Something came from the server: headers, a chunk of a body, a ping's answer. */
  heard(): void {
    this.lastRead = this.now();
  }

  /** A stream opened on the session: the process is held and the reads watched while it is open. */
  opened(): void {
    this.open++;
    this.session.ref();
    this.arm(Math.max(0, this.timing.readIdleMs - (this.now() - this.lastRead)));
  }

  closed(): void {
    this.open = Math.max(0, this.open - 1);
    if (this.open > 0 || this.session.destroyed) return;
    this.session.unref();
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(ms: number): void {
    if (this.timer || this.open === 0) return;
    this.timer = setTimeout(() => this.check(), ms);
    this.timer.unref();
  }

  private check(): void {
    this.timer = undefined;
    if (this.open === 0 || this.session.destroyed) return;
    const silent = this.now() - this.lastRead;
    if (silent < this.timing.readIdleMs) {
      this.arm(this.timing.readIdleMs - silent);
      return;
    }
    const { pingTimeoutMs } = this.timing;
    const unanswered = setTimeout(() => {
      this.session.destroy(
        new Error(`the API server answered no HTTP/2 ping in ${pingTimeoutMs / 1000} s (a connection that carries nothing)`),
      );
    }, pingTimeoutMs);
    unanswered.unref();
    this.session.ping((error) => {
      clearTimeout(unanswered);
      if (error) {
        this.session.destroy(error);
        return;
      }
      this.heard();
      this.arm(this.timing.readIdleMs);
    });
  }
}
