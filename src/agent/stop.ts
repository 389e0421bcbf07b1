import pRetry from "p-retry";
import { errorMessage, NoAnswerError, withTimeout } from "../errors.js";
import { ApiStatusError } from "../kube/errors.js";
import type { DaemonSetState, NodeApi } from "../kube/node-api.js";
import type { PodKey } from "../pod-key.js";
import type { StopMode } from "./options.js";

/** What a stop learns of the agent's DaemonSet; "unowned": no DaemonSet owns the agent's pod, so nothing replaces it. */
export type OwnerState = DaemonSetState | "unowned";

const whyUninstall: Record<Exclude<OwnerState, "present" | "unauthenticated">, string> = {
  deleted: "the DaemonSet is deleted",
  denied: "the ServiceAccount's permissions are gone (403)",
  unowned: "no DaemonSet owns the agent's pod: nothing replaces it",
};

/**
 * Whether a stop is an uninstall. A DaemonSet rollout, a restart, a node drain stop the
 * agent while its DaemonSet stays: everything stays in place, so a pod started meanwhile
 * is redirected (or fails closed and is retried), never started plaintext. Deleting the
 * DaemonSet (`kubectl delete -k deploy/`, `helm uninstall`) is the uninstall: its
 * ServiceAccount goes with it, seen on the agent's watch of that account (`deletionSeen`: a
 * watch opened before still brings it, where every request is refused from then on; the
 * account changes in no rollout), or asked at the stop (the DaemonSet gone); so is a stop
 * after its permissions went (403). A 401 proves nothing: a
 * force-deleted pod's token is refused, and a signing key rotated without the old one kept
 * refuses the agent's and the plugin's alike. Without its pod's name the agent is not in a
 * pod: it uninstalls as it stops, as it always did. When the API cannot tell, it keeps
 * everything: a leftover entry fails closed, a missing one would let pods start unmeshed.
 */
export async function decideStop(
  mode: StopMode,
  inPod: boolean,
  deletionSeen: boolean,
  ownerDaemonSet: () => Promise<OwnerState>,
): Promise<{ uninstall: boolean; why: string }> {
  if (mode !== "auto") return { uninstall: mode === "uninstall", why: `--on-stop ${mode}` };
  if (!inPod) return { uninstall: true, why: "not running in a pod (no POD_NAMESPACE/POD_NAME)" };
  if (deletionSeen) return { uninstall: true, why: "the agent's ServiceAccount was deleted (its watch said so)" };
  try {
    const owner = await ownerDaemonSet();
    if (owner === "present") return { uninstall: false, why: "the DaemonSet stays: a restart or rollout" };
    if (owner === "unauthenticated")
      return {
        uninstall: false,
        why: "the agent's token is refused (401) and no deletion of the DaemonSet was seen: its pod was force-deleted, or the signing key rotated; keeping everything",
      };
    return { uninstall: true, why: whyUninstall[owner] };
  } catch (error) {
    return {
      uninstall: false,
      why: `cannot tell whether the DaemonSet stays (${errorMessage(error)}): keeping everything. If meshcni is being uninstalled, this node keeps it: once the DaemonSet is gone, run \`meshcni uninstall\` on the node (the README's Uninstall)`,
    };
  }
}

/** How long a stop waits for one answer (a hung API server must not hold it), and asks again after failures (a restarted server, its Service's endpoint being set up again): well within the 30 s grace. */
export const stopTiming = { answerMs: 1500, forMs: 8000 };

/**
 * The owner's state, asked again after each failure (a connection reset or refused, a 5xx or
 * a 429), 250 ms growing to 2 s apart, until an answer or `forMs` has passed: then the last
 * failure. A refusal (4xx: the agent's own pod gone, say) is an answer, and no answer within
 * `answerMs` a hung server: neither is asked again, so a hung server holds the stop no longer.
 */
export function askPatiently(ask: () => Promise<OwnerState>, { answerMs, forMs } = stopTiming): Promise<OwnerState> {
  const refused = (error: Error) => error instanceof ApiStatusError && error.code >= 400 && error.code < 500 && error.code !== 429;
  return pRetry(() => withTimeout(ask(), answerMs), {
    ...{ retries: 20, minTimeout: 250, factor: 1.5, maxTimeout: 2000, maxRetryTime: forMs, randomize: false },
    shouldRetry: ({ error }) => !refused(error) && !(error instanceof NoAnswerError),
  });
}

/**
 * The state of the agent's DaemonSet at a stop, asked by the name learned at start-up
 * (`learned`; null: its pod had no DaemonSet owner). Never learned (the API was down all
 * along), it reads the pod now; a pod already gone (force-deleted, as stuck pods are) says
 * nothing of the DaemonSet and throws, so the stop keeps everything.
 */
export async function ownerState(
  api: Pick<NodeApi, "ownersOf" | "daemonSetState">,
  self: PodKey,
  learned: string | null | undefined,
): Promise<OwnerState> {
  let name = learned;
  if (name === undefined) {
    try {
      name = (await api.ownersOf(self.namespace, self.name)).daemonSet;
    } catch (error) {
      if (error instanceof ApiStatusError && error.code === 401) return "unauthenticated";
      if (error instanceof ApiStatusError && error.code === 403) return "denied";
      throw error;
    }
  }
  return name === null ? "unowned" : api.daemonSetState(self.namespace, name);
}
