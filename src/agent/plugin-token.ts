/** A token for the plugin's ServiceAccount and its lifetime (ms since the epoch). */
export interface MintedToken {
  token: string;
  mintedAt: number;
  expiresAt: number;
}

/** A minted token is replaced once this share of its life is gone, so the plugin never holds an expired one. */
const renewAtShare = 0.8;
const retryMinMs = 1000;
const retryMaxMs = 30_000;

/**
 * Keeps a token of the plugin's ServiceAccount (TokenRequest): minted at first, again once
 * 80% of its life is gone, retried after a failure with a back-off (1 s doubling to 30 s).
 * The clock is passed in; minting is the caller's I/O.
 */
export class PluginTokens {
  private current: MintedToken | undefined;
  private minting = false;
  private failures = 0;
  private retryAt = 0;

  constructor(
    readonly serviceAccount: { namespace: string; name: string },
    private readonly seconds: number,
    private readonly now: () => number,
  ) {}

  /** Whether a mint should start now: none yet or renewal due, none under way, no back-off running. */
  due(): boolean {
    const now = this.now();
    if (this.minting || now < this.retryAt) return false;
    return !this.current || now >= this.current.mintedAt + (this.current.expiresAt - this.current.mintedAt) * renewAtShare;
  }

  /** How long until the next mint is due (renewal, or the end of a back-off). */
  dueInMs(): number {
    const now = this.now();
    // A mint under way reports its end (refresh's done): look again only if it never does.
    if (this.minting) return retryMaxMs;
    if (now < this.retryAt) return this.retryAt - now;
    if (!this.current) return 0;
    return Math.max(0, this.current.mintedAt + (this.current.expiresAt - this.current.mintedAt) * renewAtShare - now);
  }

  /** The token to write, unless it has expired (then there is none). */
  token(): string | undefined {
    return this.current && this.current.expiresAt > this.now() ? this.current.token : undefined;
  }

  /** Mints when due; `done` hears of every mint's end (with its failure). */
  refresh(
    mint: (namespace: string, name: string, seconds: number) => Promise<{ token: string; expiresAt: number }>,
    done: (error?: unknown) => void,
  ): void {
    if (!this.due()) return;
    this.minting = true;
    const mintedAt = this.now();
    mint(this.serviceAccount.namespace, this.serviceAccount.name, this.seconds).then(
      ({ token, expiresAt }) => {
        this.current = { token, mintedAt, expiresAt };
        this.minting = false;
        this.failures = 0;
        done();
      },
      (error: unknown) => {
        this.minting = false;
        this.retryAt = this.now() + Math.min(retryMaxMs, retryMinMs * 2 ** this.failures++);
        done(error);
      },
    );
  }
}
