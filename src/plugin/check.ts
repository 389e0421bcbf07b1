import { CniError, ErrorCode } from "../cni/errors.js";
import { diffTable } from "../iptables/diff.js";
import { planRules } from "../iptables/plan.js";
import { hasOwnRules, parseNatTable } from "../iptables/save.js";
import { decideFirewall } from "./decide.js";
import { podName } from "./pod.js";
import { discardIptables, familiesFor, prepareIptables, withPodIptables, type PluginDeps, type PluginRequest } from "./request.js";

/**
 * CHECK: recompute the plan as ADD would and compare it with the pod netns's nat table.
 * A meshed pod must hold exactly the planned rules; an unmeshed one none of ours.
 */
export async function check(request: PluginRequest, deps: PluginDeps): Promise<void> {
  if (request.conf.linkerd.simulate) {
    await decideFirewall(request, deps);
    return;
  }
  const preparing = prepareIptables(request, deps);
  let decision;
  try {
    decision = await decideFirewall(request, deps);
  } catch (error) {
    await discardIptables(preparing);
    throw error;
  }
  const spec = decision?.spec;
  const differences = await withPodIptables(request, deps, preparing, async (runner) => {
    const found: string[] = [];
    for (const family of familiesFor(request.conf)) {
      const table = parseNatTable(await runner.save(family));
      const problems = spec
        ? diffTable(planRules(spec, family), table)
        : hasOwnRules(table) ? ["redirect rules are present but the pod is not meshed"] : [];
      found.push(...problems.map((problem) => `${family}: ${problem}`));
    }
    return found;
  });
  if (differences.length > 0) {
    const subject = decision ? `pod ${podName(decision.pod)}` : `container ${request.env.containerId}`;
    throw new CniError(ErrorCode.redirectMismatch, `${subject}: iptables redirect differs from plan: ${differences.join("; ")}`);
  }
}
