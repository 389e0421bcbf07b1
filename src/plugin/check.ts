import { CniError, ErrorCode } from "../cni/errors.js";
import { podName } from "../pod-key.js";
import { planRules } from "../redirect/plan.js";
import { inspectPlans, type Redirector } from "../redirect/redirector.js";
import type { Family } from "../redirect/spec.js";
import { hasOwnRules } from "../redirect/table.js";
import { type Decision, lookupPod, namedPod } from "./lookup.js";
import { discardRedirector, familiesFor, inPodNetns, type PluginDeps, type PluginRequest, prepareRedirector } from "./request.js";

/** An unmeshed pod must hold none of our chains or jumps. */
async function strayRules(redirector: Redirector, families: Family[]): Promise<string[]> {
  const found: string[] = [];
  for (const family of families) {
    if (hasOwnRules(await redirector.read(family))) found.push(`${family}: redirect rules are present but the pod is not meshed`);
  }
  return found;
}

/**
 * CHECK: recompute the plan as ADD would and compare it with the pod netns's nat table.
 * A meshed pod must hold exactly the planned rules; an unmeshed one none of ours. The
 * differences go in the error's details, one after another.
 */
export async function check(request: PluginRequest, deps: PluginDeps): Promise<undefined> {
  const named = namedPod(request, deps);
  deps.checkNetns(request.env.netns);
  if (request.conf.linkerd.simulate) {
    if (named) await lookupPod(request, deps, named);
    return;
  }
  // A pod ADDed before the node's iptables-mode changed holds its rules in the backend its record names until the agent moves them.
  const recorded = deps.records(request.conf.state_dir).read({ containerID: request.env.containerId, ifname: request.env.ifname });
  const preparing = prepareRedirector(request, deps, { backend: recorded?.backend });
  let decision: Decision | undefined;
  try {
    decision = named ? await lookupPod(request, deps, named) : undefined;
  } catch (error) {
    await discardRedirector(preparing);
    throw error;
  }
  const spec = decision?.spec;
  const families = familiesFor(request.conf);
  const differences = await inPodNetns(request, deps, preparing, async (redirector) =>
    spec
      ? (
          await inspectPlans(
            redirector,
            families.map((family) => planRules(spec, family)),
          )
        ).differences
      : strayRules(redirector, families),
  );
  if (differences.length > 0) {
    const subject = decision ? `pod ${podName(decision.pod)}` : `container ${request.env.containerId}`;
    throw new CniError(
      ErrorCode.redirectMismatch,
      `${subject}: redirect differs from plan (${differences.length} difference${differences.length === 1 ? "" : "s"})`,
      differences.join("; "),
    );
  }
}
