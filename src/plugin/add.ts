import { convertResult } from "../cni/result.js";
import { diffTable } from "../iptables/diff.js";
import { planRules } from "../iptables/plan.js";
import { renderApply } from "../iptables/restore.js";
import { parseNatTable } from "../iptables/save.js";
import { decideFirewall } from "./decide.js";
import { podName } from "./pod.js";
import { familiesFor, withPodIptables, type PluginDeps, type PluginRequest } from "./request.js";

const emptyTable = parseNatTable("");

/**
 * ADD: a chained plugin's result is its prevResult (or just the version). For a meshed
 * pod, each family's rules go in with one iptables-restore, after one iptables-save
 * that makes it idempotent: what matches the plan already is left alone.
 */
export async function add(request: PluginRequest, deps: PluginDeps): Promise<Record<string, unknown>> {
  const { conf } = request;
  const result: Record<string, unknown> = conf.prevResult ? convertResult(conf.prevResult, conf.cniVersion) : { cniVersion: conf.cniVersion };
  const decision = await decideFirewall(request, deps);
  if (!decision?.spec) {
    if (decision) deps.log.info("pod is not meshed: no redirect", { pod: podName(decision.pod) });
    return result;
  }
  const { spec, pod } = decision;
  const plans = familiesFor(conf).map((family) => planRules(spec, family));
  if (conf.linkerd.simulate) {
    for (const plan of plans) {
      deps.log.info("simulate: would apply", { pod: podName(pod), family: plan.family, restore: renderApply(plan, emptyTable) });
    }
    return result;
  }
  await withPodIptables(request, deps, async (runner) => {
    for (const plan of plans) {
      const table = parseNatTable(await runner.save(plan.family));
      if (diffTable(plan, table).length === 0) {
        deps.log.info("redirect already in place", { pod: podName(pod), family: plan.family });
        continue;
      }
      await runner.restore(plan.family, renderApply(plan, table));
      deps.log.info("redirect applied", { pod: podName(pod), family: plan.family, backend: runner.backend });
    }
  });
  return result;
}
