import { convertResult } from "../cni/result.js";
import { applyPlan, removeOwnRules } from "../iptables/apply.js";
import { planRules, type RulePlan } from "../iptables/plan.js";
import { renderApply } from "../iptables/restore.js";
import { parseNatTable } from "../iptables/save.js";
import { podKeyOf, podName } from "../pod-key.js";
import { type Decision, lookupPod, namedPod } from "./lookup.js";
import { discardIptables, familiesFor, type PluginDeps, type PluginRequest, prepareIptables, swept, withPodIptables } from "./request.js";

const emptyTable = parseNatTable("");

/**
 * ADD: a chained plugin's result is its prevResult (or just the version). For a meshed
 * pod, each family's rules go in atomically (applyPlan: one restore on a fresh netns;
 * a save and a restore, or nothing, on a repeated ADD), between a record saying the ADD
 * began and one saying it is done (for `meshcni audit`). The iptables runner is prepared
 * while the pod is looked up.
 */
export async function add(request: PluginRequest, deps: PluginDeps): Promise<Record<string, unknown>> {
  const { conf } = request;
  const result: Record<string, unknown> = conf.prevResult
    ? convertResult(conf.prevResult, conf.cniVersion)
    : { cniVersion: conf.cniVersion };
  const named = namedPod(request, deps);
  if (!named) return result;
  // Before any API request: a redirect in the host's netns would take the node's TCP.
  deps.checkNetns(request.env.netns);
  const preparing = conf.linkerd.simulate ? undefined : prepareIptables(request, deps);
  let decision: Decision | undefined;
  try {
    decision = await lookupPod(request, deps, named);
  } finally {
    if (preparing && !decision?.spec) await discardIptables(preparing);
  }
  if (!decision.spec) {
    deps.log.info("pod is not meshed: no redirect", { pod: podName(decision.pod) });
    return result;
  }
  const { spec, pod } = decision;
  const plans = familiesFor(conf).map((family) => planRules(spec, family));
  // simulate: nothing was prepared, nothing is applied.
  if (!preparing) {
    for (const plan of plans) {
      deps.log.info("simulate: would apply", { pod: podName(pod), family: plan.family, restore: renderApply(plan, emptyTable) });
    }
    return result;
  }
  const records = deps.records(conf.state_dir);
  swept(records.sweep(), deps);
  await withPodIptables(request, deps, preparing, async (runner) => {
    const record = {
      pod: { uid: "", ...podKeyOf(pod) },
      containerId: request.env.containerId,
      ifname: request.env.ifname,
      netns: request.env.netns,
      backend: runner.backend,
      plans,
    };
    // Recorded before the netns is touched: an ADD killed midway leaves a record saying so.
    records.write({ ...record, state: "adding" });
    const applied: RulePlan[] = [];
    try {
      for (const plan of plans) {
        const changed = await applyPlan(runner, plan);
        if (changed) applied.push(plan);
        deps.log.info(changed ? "redirect applied" : "redirect already in place", {
          pod: podName(pod),
          family: plan.family,
          backend: runner.backend,
        });
      }
      records.write({ ...record, state: "added" });
    } catch (error) {
      // A failed ADD changes nothing: an IPv4-only redirect would let IPv6 bypass the proxy.
      for (const plan of applied) await removeOwnRules(runner, plan.family);
      records.remove({ containerID: record.containerId, ifname: record.ifname });
      throw error;
    }
  });
  return result;
}
