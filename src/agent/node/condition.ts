import type { V1Node, V1NodeCondition } from "@kubernetes/client-node";
import type { PodStatus } from "../../audit/classify.js";
import { errorMessage } from "../../errors.js";
import type { Readiness } from "../../installer/readiness.js";
import type { NodeApi } from "../../kube/node-api.js";
import type { Logger } from "../../log.js";
import { formatPodKey, type PodKey } from "../../pod-key.js";

/** The Node condition the agent keeps: what a Node Readiness Controller rule, or any tooling, gates on. */
export const conditionType = "MeshcniReady";

/** What the condition says: its status, its reason (one word) and its message. */
export type ConditionState = Pick<V1NodeCondition, "status" | "reason" | "message">;

/** The message's end before the first sweep: its replacement by the first summary is written at once, not held back. */
const notAudited = "meshed pods not audited yet";

/**
 * The condition for the agent's readiness and its last sweeps: True ("Ready", or
 * "PodsUnprotected" while a meshed pod is left without its redirect: the node still
 * starts pods meshed) or False with the readiness problem's word. The message leads with
 * the version and sums up the node's meshed pods as the sweeps found them, ready or not (a
 * pod redirected in place counts as found, missing, but not as unprotected). Pure.
 */
export function nodeCondition(
  readiness: Readiness,
  sweeps: { counts: Record<PodStatus, number>; unprotected: PodKey[] } | undefined,
  version: string,
): ConditionState {
  // Sweeps go on while the agent is not ready: the pods they left unprotected are still named.
  const summary = sweeps && podsText(sweeps);
  if (!readiness.ready) {
    const message = `meshcni ${version}: ${readiness.reasons.join("; ")}${summary ? `; ${summary}` : ""}`;
    return { status: "False", reason: readiness.cause ?? "NotReady", message };
  }
  const chained = `meshcni ${version} chained ${readiness.chainedBy ?? `in ${readiness.active}`}`;
  if (!sweeps) return { status: "True", reason: "Ready", message: `${chained}; ${notAudited}` };
  return { status: "True", reason: sweeps.unprotected.length > 0 ? "PodsUnprotected" : "Ready", message: `${chained}; ${summary}` };
}

/** `3 meshed pods: 1 protected, 2 missing; 2 unprotected: shop/web, batch/nightly`. */
function podsText({ counts, unprotected }: { counts: Record<PodStatus, number>; unprotected: PodKey[] }): string {
  const meshed = Object.values(counts).reduce((sum, count) => sum + count, 0);
  const parts = Object.entries(counts)
    .filter(([status, count]) => count > 0 || status === "protected")
    .map(([status, count]) => `${count} ${status}`);
  return `${meshed} meshed pod${meshed === 1 ? "" : "s"}: ${parts.join(", ")}${unprotectedText(unprotected)}`;
}

/** How many unprotected pods the message names (`meshcni status` lists them); the rest are counted. */
export const namedUnprotected = 5;

/** `; 2 unprotected: shop/web, shop/api`, and how many more. */
function unprotectedText(pods: PodKey[]): string {
  if (pods.length === 0) return "";
  const names = pods.slice(0, namedUnprotected).map(formatPodKey).join(", ");
  const more = pods.length - namedUnprotected;
  return `; ${pods.length} unprotected: ${names}${more > 0 ? ` and ${more} more` : ""}`;
}

/** A change of the message alone (pod counts) is written at most this often; of status or reason, at once. */
const messageIntervalMs = 10_000;

const same = (a: ConditionState | undefined, b: ConditionState) =>
  a !== undefined && a.status === b.status && a.reason === b.reason && a.message === b.message;

/**
 * Keeps the condition on the agent's Node: one patch of the node's status per change
 * (never one per sweep when nothing changed), a change of the message alone at most every
 * 10 s (the first sweep's summary at once: an agent just started says what it found).
 * Nothing is written before the Node's watch has shown it; what it holds is read
 * from the watch then, and again only from a Node registered anew (another uid), so an
 * agent restarted into the same state writes nothing, a re-registered Node gets the
 * condition again, and a watch event older than the agent's own write is not taken for a
 * change. The transition time moves only when the status does. One patch at a time; a
 * failed one is retried.
 */
export class ConditionKeeper {
  private held: V1NodeCondition | undefined;
  /** The uid of the Node whose condition `held` is; undefined until the watch shows it. */
  private nodeUid: string | undefined;
  private wanted: ConditionState | undefined;
  private busy = false;
  private lastWriteAt = Number.NEGATIVE_INFINITY;
  private timer: NodeJS.Timeout | undefined;
  private failing = false;

  constructor(
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
    private readonly intervalMs = messageIntervalMs,
  ) {}

  /** `node`: the node as its watch last showed it (undefined: not shown yet, or gone). */
  follow(api: NodeApi, wanted: ConditionState, node: V1Node | undefined): void {
    const uid = node?.metadata?.uid;
    if (node && uid !== this.nodeUid) {
      this.nodeUid = uid;
      this.held = node.status?.conditions?.find((condition) => condition.type === conditionType);
    }
    this.wanted = wanted;
    this.write(api);
  }

  stop(): void {
    clearTimeout(this.timer);
  }

  /** Writes again after `ms`, unless a write is already due. */
  private later(api: NodeApi, ms: number): void {
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      this.write(api);
    }, ms);
  }

  private write(api: NodeApi): void {
    const wanted = this.wanted;
    if (!wanted || this.nodeUid === undefined || same(this.held, wanted) || this.busy) return;
    const messageOnly =
      this.held?.status === wanted.status && this.held.reason === wanted.reason && !this.held.message?.endsWith(notAudited);
    const wait = messageOnly ? this.lastWriteAt + this.intervalMs - this.now() : 0;
    if (wait > 0) {
      this.later(api, wait);
      return;
    }
    const at = new Date(this.now());
    const condition: V1NodeCondition = {
      type: conditionType,
      ...wanted,
      lastHeartbeatTime: at,
      lastTransitionTime: this.held?.status === wanted.status && this.held.lastTransitionTime ? this.held.lastTransitionTime : at,
    } as V1NodeCondition;
    this.busy = true;
    this.lastWriteAt = this.now();
    api
      .setNodeCondition(condition)
      .then(() => {
        this.held = condition;
        if (this.failing) this.log.info(`the node's ${conditionType} condition is written again`);
        this.failing = false;
        this.log.debug("node condition written", { status: wanted.status, reason: wanted.reason, message: wanted.message });
      })
      .catch((error: unknown) => {
        if (!this.failing) this.log.warn(`cannot write the node's ${conditionType} condition; retrying`, { error: errorMessage(error) });
        this.failing = true;
        this.later(api, this.intervalMs);
      })
      .finally(() => {
        this.busy = false;
        // What was wanted meanwhile.
        if (!this.failing) this.write(api);
      });
  }
}
