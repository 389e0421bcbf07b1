import { errorMessage } from "../errors.js";
import type { StopMode } from "./options.js";

/**
 * Whether a stop is an uninstall. A DaemonSet rollout, a restart, a node drain stop the
 * agent while its DaemonSet stays: everything stays in place, so a pod started meanwhile
 * is redirected (or fails closed and is retried), never started plaintext. Deleting the
 * DaemonSet (`kubectl delete -k deploy/`) is the uninstall; so is a stop after its
 * ServiceAccount or permissions went (401/403), as they go with it. Without its pod's
 * name the agent is not in a pod: it uninstalls as it stops, as it always did. When the
 * API cannot answer, it keeps everything: a leftover entry fails closed, a missing one
 * would let pods start unmeshed.
 */
export async function decideStop(
  mode: StopMode,
  inPod: boolean,
  ownerDaemonSet: () => Promise<"present" | "deleted" | "denied">,
): Promise<{ uninstall: boolean; why: string }> {
  if (mode !== "auto") return { uninstall: mode === "uninstall", why: `--on-stop ${mode}` };
  if (!inPod) return { uninstall: true, why: "not running in a pod (no POD_NAMESPACE/POD_NAME)" };
  try {
    const owner = await ownerDaemonSet();
    if (owner === "present") return { uninstall: false, why: "the DaemonSet stays: a restart or rollout" };
    return {
      uninstall: true,
      why: owner === "deleted" ? "the DaemonSet is deleted" : "the ServiceAccount or its permissions are gone (401/403)",
    };
  } catch (error) {
    return { uninstall: false, why: `cannot tell whether the DaemonSet stays (${errorMessage(error)}): keeping everything` };
  }
}
