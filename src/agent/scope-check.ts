import { errorMessage } from "../errors.js";
import { ApiStatusError } from "../kube/errors.js";
import type { Logger } from "../log.js";
import type { AgentClient } from "./credentials.js";

/** What the agent says when its token is not held to its node: it is then not ready (PolicyNotBound). */
export const unboundProblem =
  "the node-scope ValidatingAdmissionPolicy does not hold this agent's ServiceAccount to its node (a dry-run write it must " +
  "refuse was accepted): apply deploy/'s policy with the manifests, and keep the agent's ServiceAccount named meshcni " +
  "(a kustomize namePrefix renames it; moving it to another namespace is fine)";

/** How often an agent found unbound asks again: the operator's fix is seen within this. */
const recheckUnboundMs = 60_000;

/**
 * Whether the node-scope policy binds the agent, asked of the API server once per client
 * (a dry run, nothing stored), again after a failure at the agent's next reconcile, and
 * every minute while it is found unbound. An
 * API server without ValidatingAdmissionPolicies (before 1.30) is said once, not held
 * against readiness: there the agent is as wide as its RBAC, as the README says.
 */
export class ScopeCheck {
  private checked: AgentClient | undefined;
  private checkedAt = 0;
  private busy = false;
  private current: string | undefined;
  private saidUnsupported = false;
  private failing = false;

  constructor(
    private readonly log: Logger,
    /** Told when the answer changes readiness. */
    private readonly changed: () => void,
    private readonly now: () => number,
  ) {}

  /** Why the agent's authority is wider than its node; undefined: held, or not known yet. */
  problem(): string | undefined {
    return this.current;
  }

  follow(client: AgentClient): void {
    if (this.busy) return;
    if (this.checked === client && (this.current === undefined || this.now() - this.checkedAt < recheckUnboundMs)) return;
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
          const problem = state === "unbound" ? unboundProblem : undefined;
          if (problem === this.current) return;
          if (problem) this.log.error(problem);
          else this.log.info("the node-scope policy holds the agent to its node");
          this.current = problem;
          this.changed();
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
}
