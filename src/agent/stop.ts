import { errorMessage } from "../errors.js";
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
 * DaemonSet (`kubectl delete -k deploy/`) is the uninstall; so is a stop after its
 * ServiceAccount or permissions went (401/403), as they go with it. A 401 alone does not
 * tell: a force-deleted pod's token is refused too, its ServiceAccount still there; the
 * plugin's token (another ServiceAccount's, bound to the Node) is refused as well only when
 * meshcni's ServiceAccounts went (`pluginTokenRefused`). Without its pod's
 * name the agent is not in a pod: it uninstalls as it stops, as it always did. When the
 * API cannot answer, it keeps everything: a leftover entry fails closed, a missing one
 * would let pods start unmeshed.
 */
export async function decideStop(
  mode: StopMode,
  inPod: boolean,
  ownerDaemonSet: () => Promise<OwnerState>,
  pluginTokenRefused: () => Promise<boolean>,
): Promise<{ uninstall: boolean; why: string }> {
  if (mode !== "auto") return { uninstall: mode === "uninstall", why: `--on-stop ${mode}` };
  if (!inPod) return { uninstall: true, why: "not running in a pod (no POD_NAMESPACE/POD_NAME)" };
  try {
    const owner = await ownerDaemonSet();
    if (owner === "present") return { uninstall: false, why: "the DaemonSet stays: a restart or rollout" };
    if (owner === "unauthenticated")
      return (await pluginTokenRefused())
        ? { uninstall: true, why: "the ServiceAccounts are gone (401 for the agent's token and the plugin's)" }
        : {
            uninstall: false,
            why: "the agent's token is refused (401) while the plugin's is not: its pod was deleted; keeping everything",
          };
    return { uninstall: true, why: whyUninstall[owner] };
  } catch (error) {
    return { uninstall: false, why: `cannot tell whether the DaemonSet stays (${errorMessage(error)}): keeping everything` };
  }
}

/**
 * The state of the agent's DaemonSet at a stop, asked by the name learned at start-up
 * (`learned`; null: its pod had no DaemonSet owner). Never learned (the API was down all
 * along), it reads the pod now; a pod already gone (force-deleted, as stuck pods are) says
 * nothing of the DaemonSet and throws, so the stop keeps everything.
 */
export async function ownerState(
  api: Pick<NodeApi, "daemonSetOf" | "daemonSetState">,
  self: PodKey,
  learned: string | null | undefined,
): Promise<OwnerState> {
  let name = learned;
  if (name === undefined) {
    try {
      name = await api.daemonSetOf(self.namespace, self.name);
    } catch (error) {
      if (error instanceof ApiStatusError && error.code === 401) return "unauthenticated";
      if (error instanceof ApiStatusError && error.code === 403) return "denied";
      throw error;
    }
  }
  return name === null ? "unowned" : api.daemonSetState(self.namespace, name);
}
