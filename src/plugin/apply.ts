import type { Decided } from "../agent-socket.js";
import type { Logger } from "../log.js";
import { formatPodKey, type PodKey } from "../pod-key.js";
import { planLines, type RulePlan } from "../redirect/plan.js";
import type { Redirector } from "../redirect/redirector.js";
import type { Family } from "../redirect/spec.js";
import type { RecordStore } from "../state/records.js";
import type { PluginDeps } from "./request.js";

/**
 * Logs what a sweep of abandoned temp and lock files removed. Here, beside the writer, and
 * not in request.ts: an ADD the agent decided loads this module, and request.ts loads the
 * annotation code it no longer needs.
 */
export function swept(names: string[], deps: Pick<PluginDeps, "log">): void {
  if (names.length > 0) deps.log.info("removed files killed plugin processes left behind", { files: names });
}

/** simulate: what would be written, logged; nothing is. */
export function logSimulated(pod: PodKey, plans: RulePlan[], deps: Pick<PluginDeps, "log">): void {
  for (const plan of plans) deps.log.info("simulate: would apply", { pod: formatPodKey(pod), family: plan.family, rules: planLines(plan) });
}

/** The attachment the runtime named: where the rules go, and what their record is called. */
export interface Target {
  containerId: string;
  ifname: string;
  netns: string;
}

/**
 * Writes the plans into the pod's netns (every family, or none: see Redirector.apply),
 * between a record saying the ADD began and one saying it is done (for `meshcni audit`);
 * a failure takes out what it wrote and puts back the record there was. Under the
 * attachment's lock: a writer of the agent's that fails late undoes only its own write,
 * never one a plugin that stopped waiting for it made. The prepared redirector is closed.
 */
export async function writeRedirect(
  target: Target,
  pod: PodKey & { uid: string },
  plans: RulePlan[],
  preparing: Promise<Redirector>,
  records: RecordStore,
  deps: Pick<PluginDeps, "inNetns" | "log">,
): Promise<void> {
  swept(records.sweep(), deps);
  const redirector = await preparing;
  const attachment = { containerID: target.containerId, ifname: target.ifname };
  try {
    const release = await records.lock(attachment);
    try {
      const before = records.read(attachment);
      await deps.inNetns(target.netns, async () => {
        const record = { pod, ...target, backend: redirector.backend, plans };
        // Recorded before the netns is touched: an ADD killed midway leaves a record saying so.
        records.write({ ...record, state: "adding" });
        let changed: Family[] = [];
        try {
          changed = await redirector.apply(plans);
          for (const plan of plans) {
            deps.log.info(changed.includes(plan.family) ? "redirect applied" : "redirect already in place", {
              pod: formatPodKey(pod),
              family: plan.family,
              backend: redirector.backend,
            });
          }
          records.write({ ...record, state: "added" });
        } catch (error) {
          // A failed ADD changes nothing: an IPv4-only redirect would let IPv6 bypass the proxy.
          await redirector.remove(changed);
          if (before) records.write(before);
          else records.remove(attachment);
          throw error;
        }
      });
    } finally {
      release();
    }
  } finally {
    redirector.close();
  }
}

/** An unmeshed pod's ADD: nothing to write, said. */
export function logUnmeshed(pod: PodKey, log: Logger): void {
  log.info("pod is not meshed: no redirect", { pod: formatPodKey(pod) });
}

/**
 * Carries out ADD's decision as ADD does: nothing for an unmeshed pod, the plan logged under
 * simulate, else the rules and records written. Both places a decision comes to run it: the
 * plugin (the agent decided; it writes) and the agent's writer, whose deps see the host's
 * paths from its container and enter only the netns the plugin opened (plugin/deps.ts).
 */
export async function applyDecision(
  target: Target,
  decided: Pick<Decided, "pod" | "plans" | "settings">,
  deps: Pick<PluginDeps, "log" | "inNetns" | "records" | "redirector">,
): Promise<void> {
  const { pod, plans, settings } = decided;
  if (plans.length === 0) return logUnmeshed(pod, deps.log);
  if (settings.simulate) return logSimulated(pod, plans, deps);
  await writeRedirect(target, pod, plans, deps.redirector(settings), deps.records(settings.stateDir), deps);
}
