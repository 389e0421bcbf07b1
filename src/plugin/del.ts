import { removeOwnRules } from "../iptables/apply.js";
import { NetnsGoneError } from "../netns/enter.js";
import { familiesFor, type PluginDeps, type PluginRequest, prepareIptables, withPodIptables } from "./request.js";

/**
 * DEL: remove our chains and the jumps into them, without the API (it may be down, the
 * kubeconfig gone, the pod deleted). Nothing there, or no netns, is success.
 */
export async function del(request: PluginRequest, deps: PluginDeps): Promise<undefined> {
  const { conf, env } = request;
  if (conf.linkerd.simulate) return;
  deps.records(conf.state_dir).remove({ containerID: env.containerId, ifname: env.ifname });
  if (!env.netns) {
    deps.log.info("no CNI_NETNS: the netns is gone, nothing to remove");
    return;
  }
  try {
    await withPodIptables(request, deps, prepareIptables(request, deps), async (runner) => {
      for (const family of familiesFor(conf)) await removeOwnRules(runner, family);
    });
  } catch (error) {
    if (!(error instanceof NetnsGoneError)) throw error;
    deps.log.info("netns is gone, nothing to remove", { reason: error.message });
  }
}
