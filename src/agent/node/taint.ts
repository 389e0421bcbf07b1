import type { V1Node, V1Taint } from "@kubernetes/client-node";
import { errorMessage } from "../../errors.js";
import { ApiStatusError } from "../../kube/errors.js";
import type { NodeApi } from "../../kube/node-api.js";
import type { Logger } from "../../log.js";
import type { TaintSpec } from "../../taint-spec.js";

const same = (taint: V1Taint, spec: TaintSpec) => taint.key === spec.key && taint.effect === spec.effect;

/** Tries of a read and a conditional update when the node changed in between (kubelet, the agent's own condition). */
const conflictTries = 3;

/**
 * Makes the node carry the taint or not; returns whether it changed anything. The
 * update is conditional on the node's resourceVersion, so a concurrent change to the
 * node's taints by someone else is never overwritten: the node is read again and the
 * update made anew.
 */
async function syncTaint(api: NodeApi, spec: TaintSpec, present: boolean): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    const { taints, resourceVersion } = await api.nodeTaints();
    const has = taints.some((taint) => same(taint, spec));
    if (has === present) return false;
    const next = present
      ? [...taints, { key: spec.key, effect: spec.effect, ...(spec.value ? { value: spec.value } : {}) }]
      : taints.filter((taint) => !same(taint, spec));
    try {
      await api.setNodeTaints(next, resourceVersion);
      return true;
    } catch (error) {
      // The node changed since it was read: 409 Conflict (an admission's denial is a 422, never retried).
      const conflict = error instanceof ApiStatusError && error.code === 409;
      if (!conflict || attempt === conflictTries) throw error;
    }
  }
}

/**
 * Keeps the node's startup taint in step with readiness: lifted once ready, put back
 * while not ready when asked to (restore). What the node carries is what its watch last
 * showed, so a Node deleted and registered again with the taint (kubelet's
 * --register-with-taints) gets it lifted again; before the watch has shown the node, what
 * this keeper last set. One update at a time; a failed one is retried.
 */
export class TaintKeeper {
  /** Whether the node carries the taint, as last seen or set; undefined until known. */
  private present: boolean | undefined;
  private busy = false;

  constructor(
    private readonly spec: TaintSpec,
    private readonly restore: boolean,
    private readonly log: Logger,
    private readonly retry: () => void,
  ) {}

  /** `node`: the node as its watch last showed it (undefined: not shown yet, or gone). */
  follow(api: NodeApi, ready: boolean, node: V1Node | undefined): void {
    if (node) this.present = (node.spec?.taints ?? []).some((taint) => same(taint, this.spec));
    const wanted = ready ? false : this.restore ? true : undefined;
    if (wanted === undefined || wanted === this.present || this.busy) return;
    this.busy = true;
    syncTaint(api, this.spec, wanted)
      .then((changed) => {
        this.present = wanted;
        if (changed) this.log.info(wanted ? "startup taint restored" : "startup taint removed", { taint: this.spec.key });
      })
      .catch((error: unknown) => {
        this.log.error("cannot update the node's taints; retrying", { error: errorMessage(error) });
        this.retry();
      })
      .finally(() => {
        this.busy = false;
      });
  }
}
