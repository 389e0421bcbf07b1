import { convertResult } from "../cni/result.js";
import { podKeyOf } from "../pod-key.js";
import { planRules } from "../redirect/plan.js";
import { logSimulated, logUnmeshed, writeRedirect } from "./apply.js";
import { type Decision, lookupPod, namedPod } from "./lookup.js";
import { discardRedirector, familiesFor, type PluginDeps, type PluginRequest, prepareRedirector } from "./request.js";

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
    logUnmeshed(podKeyOf(decision.pod), deps.log);
    return result;
  }
  const { spec, pod } = decision;
  const plans = familiesFor(conf).map((family) => planRules(spec, family));
  if (!conf.linkerd.simulate) preparing ??= prepareRedirector(request, deps);
  // simulate: nothing was prepared, nothing is applied.
  if (!preparing) {
    logSimulated(podKeyOf(pod), plans, deps);
    return result;
  }
  const { containerId, ifname, netns } = request.env;
  await writeRedirect({ containerId, ifname, netns }, { uid: "", ...podKeyOf(pod) }, plans, preparing, deps.records(conf.state_dir), deps);
  return result;
}
