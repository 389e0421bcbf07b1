import { errorMessage } from "../../errors.js";
import { Backoff } from "../../kube/backoff.js";
import { ApiStatusError } from "../../kube/errors.js";
import type { Logger } from "../../log.js";
import type { AgentClient } from "../credentials.js";

/** What the agent says when its token is not held to its node: it is then not ready (PolicyNotBound). */
export const unboundProblem =
  "the node-scope ValidatingAdmissionPolicy does not hold this agent's ServiceAccount to its node (a dry-run write it must " +
  "refuse was accepted): apply deploy/'s policy with the manifests, and keep the agent's ServiceAccount named meshcni " +
  "(a kustomize namePrefix renames it; moving it to another namespace is fine)";

/** The longest an agent found unbound waits to ask again: the operator's fix is seen within this. */
const recheckUnboundCapMs = 60_000;
/**
 * How long unbound may be a policy still taking effect: the API server enforces a policy
 * seconds after it is created, and an install creates it with the DaemonSet (Helm last of
 * all). Within this it is said at info; past it, as the error it then is.
 */
const settlingMs = 30_000;

/**
 * Whether the node-scope policy binds the agent, asked of the API server once per client
 * (a dry run, nothing stored), again after a failure at the agent's next reconcile, and
 * while it is found unbound after 1 s, 2 s, 4 s … up to every minute. An
 * API server without ValidatingAdmissionPolicies (before 1.30) is said once, not held
 * against readiness: there the agent is as wide as its RBAC (docs/reference.md: Compatibility).
 */
export class ScopeCheck {
  private checked: AgentClient | undefined;
  private checkedAt = 0;
  private busy = false;
  private current: string | undefined;
  private saidUnsupported = false;
  private failing = false;
  private recheckInMs = 0;
  private unboundSince: number | undefined;
  private saidUnbound = false;

  constructor(
    private readonly log: Logger,
    /** Asks for a reconcile (one that follows this check) after delayMs: the answer changed readiness, or a recheck is due. */
    private readonly schedule: (delayMs: number) => void,
    private readonly now: () => number,
    private readonly backoff = new Backoff(1000, recheckUnboundCapMs),
  ) {}

  /** Why the agent's authority is wider than its node; undefined: held, or not known yet. */
  problem(): string | undefined {
    return this.current;
  }

  follow(client: AgentClient): void {
    if (this.busy) return;
    if (this.checked === client && (this.current === undefined || this.now() - this.checkedAt < this.recheckInMs)) return;
    this.busy = true;
    client.api
      .probeNodeScope()
      .then(
        (state) => {
          this.checked = client;
          this.checkedAt = this.now();
          this.failing = false;
          if (state === "unsupported" && !this.saidUnsupported) {
            this.saidUnsupported = true;
            this.log.info("this API server has no ValidatingAdmissionPolicy (before 1.30): the agent's token is as wide as its RBAC");
          }
          if (state === "unbound") this.unbound();
          else this.held();
        },
        (error: unknown) => {
          // Said once per run of failures; a Node not registered (yet, or again) is no news.
          const quiet = this.failing || (error instanceof ApiStatusError && error.code === 404);
          this.log[quiet ? "debug" : "warn"]("cannot check the node-scope policy yet; trying at each reconcile", {
            error: errorMessage(error),
          });
          this.failing = true;
        },
      )
      .finally(() => {
        this.busy = false;
      });
  }

  private unbound(): void {
    this.unboundSince ??= this.checkedAt;
    this.recheckInMs = this.backoff.next();
    const settling = this.checkedAt - this.unboundSince < settlingMs;
    if (!settling && !this.saidUnbound) this.log.error(unboundProblem);
    else if (this.current === undefined)
      this.log.info("the node-scope policy does not hold this agent yet (a policy takes seconds to take effect); asking again");
    this.saidUnbound ||= !settling;
    this.current = unboundProblem;
    // Timers may fire a little early: a reconcile before the recheck is due would not ask.
    this.schedule(this.recheckInMs + 100);
  }

  private held(): void {
    this.backoff.reset();
    this.unboundSince = undefined;
    this.saidUnbound = false;
    if (this.current === undefined) return;
    this.log.info("the node-scope policy holds the agent to its node");
    this.current = undefined;
    this.schedule(1000);
  }
}
