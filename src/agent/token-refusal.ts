import { ApiStatusError } from "../kube/errors.js";

/**
 * Whether the API server refuses the agent's own token (401), as its lists and watches hear
 * it: a signing key rotated without the old one kept, or its ServiceAccount deleted. Nothing
 * the agent does mends it (kubelet renews the token by 80% of its life; new pods get new
 * tokens at once), so it says so, and stays not ready until a request is accepted again.
 */
export class TokenRefusal {
  private since: Date | undefined;
  /** When the request that last changed it was sent: an answer to one sent before says nothing newer. */
  private changedBy = Number.NEGATIVE_INFINITY;

  constructor(
    /** Called when it starts or ends. */
    private readonly changed: (refused: boolean) => void,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** What a request of the agent's sent at `sentAt` (performance.now()) came to: undefined, accepted; else its failure. */
  heard(sentAt: number, failure?: unknown): void {
    if (sentAt <= this.changedBy) return;
    const refused = failure instanceof ApiStatusError && failure.code === 401;
    if (failure !== undefined && !refused) return;
    if (refused === (this.since !== undefined)) return;
    this.changedBy = sentAt;
    this.since = refused ? this.now() : undefined;
    this.changed(refused);
  }

  /** Why the agent is not ready, while it lasts. */
  problem(): string | undefined {
    if (!this.since) return undefined;
    return (
      `the API server refuses the agent's token (401 Unauthorized) since ${this.since.toISOString()}: its signing key was ` +
      "rotated without the old one kept, or the agent's ServiceAccount is gone; kubelet renews the token by 80% of its " +
      "life, and restarting meshcni's pods (kubectl rollout restart daemonset) gives them new tokens at once"
    );
  }
}
