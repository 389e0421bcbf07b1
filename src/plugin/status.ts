import { CniError, ErrorCode } from "../cni/errors.js";
import { errorMessage } from "../errors.js";
import { restoreBinaries } from "../host.js";
import type { Family } from "../redirect/spec.js";
import { type PluginDeps, type PluginRequest, redirectorSettings } from "./request.js";

/**
 * STATUS: can ADD work? Only local facts, so an API server blip never marks the node's
 * network not ready: the kubeconfig loads and has credentials, and the backend ADD would
 * use is there (its restore binaries; for nftables, nf_tables answering over netlink).
 * The backend is logged.
 */
export async function status(request: PluginRequest, deps: PluginDeps): Promise<undefined> {
  const { conf } = request;
  const problems: string[] = [];
  try {
    await deps.checkKubeconfig(conf.kubernetes.kubeconfig);
  } catch (error) {
    problems.push(errorMessage(error));
  }
  const backend = await deps.backend(conf);
  const families: Family[] = conf.linkerd.ipv6 ? ["ipv4", "ipv6"] : ["ipv4"];
  if (backend === "nftables") {
    // nf_tables answers a read of meshcni's table in the host netns (there is none: nothing changes).
    const redirector = await deps.redirector(redirectorSettings(conf));
    try {
      for (const family of families) await redirector.read(family);
    } catch (error) {
      problems.push(`nf_tables does not answer over netlink: ${errorMessage(error)}`);
    } finally {
      redirector.close();
    }
  } else {
    for (const binary of restoreBinaries(backend, families))
      if (!deps.binaryAvailable(binary)) problems.push(`${binary} not found for iptables backend ${backend}`);
  }
  deps.log.info(problems.length === 0 ? "ADD can be served" : "ADD cannot be served", { backend });
  if (problems.length > 0) throw new CniError(ErrorCode.pluginNotAvailable, `meshcni cannot serve ADD: ${problems.join("; ")}`);
}
