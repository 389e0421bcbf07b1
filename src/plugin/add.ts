import { convertResult } from "../cni/result.js";
import { podKeyOf, podName } from "../pod-key.js";
import { planLines, planRules } from "../redirect/plan.js";
import type { Family } from "../redirect/spec.js";
import { type Decision, lookupPod, namedPod } from "./lookup.js";
import { discardRedirector, familiesFor, inPodNetns, type PluginDeps, type PluginRequest, prepareRedirector, swept } from "./request.js";

/**
 * ADD: a chained plugin's result is its prevResult (or just the version). For a meshed
 * pod, the rules go in (every family, or none: see Redirector.apply), between a record
 * saying the ADD began and one saying it is done (for `meshcni audit`). Asking the API,
 * the redirector is prepared while the pod is looked up (it overlaps the network); asking
 * the agent, whose answer takes a millisecond, only once the pod is known to be meshed:
 * an unmeshed pod's ADD then loads no backend at all.
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
  const early = !conf.linkerd.simulate && !conf.agent_socket;
  let preparing = early ? prepareRedirector(request, deps) : undefined;
  let decision: Decision | undefined;
  try {
    decision = await lookupPod(request, deps, named);
  } finally {
    if (preparing && !decision?.spec) await discardRedirector(preparing);
  }
  if (!decision.spec) {
    deps.log.info("pod is not meshed: no redirect", { pod: podName(decision.pod) });
    return result;
  }
  const { spec, pod } = decision;
  const plans = familiesFor(conf).map((family) => planRules(spec, family));
  if (!conf.linkerd.simulate) preparing ??= prepareRedirector(request, deps);
  // simulate: nothing was prepared, nothing is applied.
  if (!preparing) {
    for (const plan of plans) {
      deps.log.info("simulate: would apply", { pod: podName(pod), family: plan.family, rules: planLines(plan) });
    }
    return result;
  }
  const records = deps.records(conf.state_dir);
  swept(records.sweep(), deps);
  await inPodNetns(request, deps, preparing, async (redirector) => {
    const record = {
      pod: { uid: "", ...podKeyOf(pod) },
      containerId: request.env.containerId,
      ifname: request.env.ifname,
      netns: request.env.netns,
      backend: redirector.backend,
      plans,
    };
    // Recorded before the netns is touched: an ADD killed midway leaves a record saying so.
    records.write({ ...record, state: "adding" });
    let changed: Family[] = [];
    try {
      changed = await redirector.apply(plans);
      for (const plan of plans) {
        deps.log.info(changed.includes(plan.family) ? "redirect applied" : "redirect already in place", {
          pod: podName(pod),
          family: plan.family,
          backend: redirector.backend,
        });
      }
      records.write({ ...record, state: "added" });
    } catch (error) {
      // A failed ADD changes nothing: an IPv4-only redirect would let IPv6 bypass the proxy.
      await redirector.remove(changed);
      records.remove({ containerID: record.containerId, ifname: record.ifname });
      throw error;
    }
  });
  return result;
}
