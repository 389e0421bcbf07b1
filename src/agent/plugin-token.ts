import { Backoff } from "../kube/backoff.js";
import type { Mint } from "../kube/token-request.js";

/** A token for the plugin's ServiceAccount and its life, by this node's clock (ms since the epoch). */
export interface MintedToken {
  token: string;
  mintedAt: number;
  expiresAt: number;
}

/** The longest life a plugin token may be asked for: the node-scope policy refuses longer ones (src/manifests/policy.ts). */
export const maxPluginTokenSeconds = 86_400;

/** A minted token is replaced once this share of its life is gone, so the plugin never holds an expired one. */
const renewAtShare = 0.8;
/** At most one TokenRequest this often, whatever happens: a few a minute at the very most. */
const minIntervalMs = 10_000;

/**
 * Keeps a token of the plugin's ServiceAccount (TokenRequest): minted at first, again once
 * 80% of its life is gone, retried after a failure with a back-off (1 s doubling to 30 s),
 * never twice within 10 s. Its life is what the server granted (its expiry less its own
 * time, both on its clock) counted from the request on this node's clock, so an API server
 * whose clock is hours off never makes a fresh token look expired. The clock is passed in;
 * minting is the caller's I/O.
 */
export class PluginTokens {
  private current: MintedToken | undefined;
  private minting = false;
  private lastAttemptAt = Number.NEGATIVE_INFINITY;
  private retryAt = 0;
  /** Renew before the current token's renewal falls due (renewNow). */
  private renewing = false;
  private readonly backoff: Backoff;
  /** The server's clock less this node's at the last mint, when the server said its time. */
  skewMs: number | undefined;
  /** Whether the last token minted dies with the Node (the server binds tokens to Nodes). */
  boundToNode: boolean | undefined;

  constructor(
    readonly serviceAccount: { namespace: string; name: string },
    private readonly seconds: number,
    private readonly now: () => number,
    random: () => number = Math.random,
  ) {
    this.backoff = new Backoff(1000, 30_000, random);
  }

  /** Whether a mint should start now: none yet or renewal due, none under way, no back-off or interval running. */
  due(): boolean {
    return !this.minting && this.dueInMs() === 0;
  }

  /** How long until the next mint is due (renewal, the end of a back-off, or of the interval between two). */
  dueInMs(): number {
    const now = this.now();
    // A mint under way reports its end (refresh's done): look again only if it never does.
    if (this.minting) return 30_000;
    const renewal =
      this.current && !this.renewing ? this.current.mintedAt + (this.current.expiresAt - this.current.mintedAt) * renewAtShare : 0;
    return Math.max(0, this.retryAt - now, this.lastAttemptAt + minIntervalMs - now, renewal - now);
  }

  /** Mints again as soon as the interval between two mints allows, whatever the current token has left. */
  renewNow(): void {
    this.renewing = true;
  }

  /** Milliseconds the current token has left (undefined: none minted yet). */
  leftMs(): number | undefined {
    return this.current && this.current.expiresAt - this.now();
  }

  /** The token to write, unless it has expired (then there is none). */
  token(): string | undefined {
    return this.current && this.current.expiresAt > this.now() ? this.current.token : undefined;
  }

  /** Mints when due; `done` hears of every mint's end (with its failure). */
  refresh(mint: (namespace: string, name: string, seconds: number) => Promise<Mint>, done: (error?: unknown) => void): void {
    if (!this.due()) return;
    this.minting = true;
    const mintedAt = this.now();
    this.lastAttemptAt = mintedAt;
    mint(this.serviceAccount.namespace, this.serviceAccount.name, this.seconds).then(
      ({ token, validForMs, serverNow, boundToNode }) => {
        this.current = { token, mintedAt, expiresAt: mintedAt + validForMs };
        this.renewing = false;
        this.boundToNode = boundToNode;
        this.skewMs = serverNow === undefined ? undefined : serverNow - this.now();
        this.minting = false;
        this.backoff.reset();
        done();
      },
      (error: unknown) => {
        this.minting = false;
        this.retryAt = this.now() + this.backoff.next();
        done(error);
      },
    );
  }
}
