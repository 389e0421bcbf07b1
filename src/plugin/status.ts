import { CniError, ErrorCode } from "../cni/errors.js";
import { binaryName, resolveBackend } from "../iptables/backend.js";
import { binaryAvailable, hostSaveProbe } from "../iptables/exec.js";
import type { Family } from "../iptables/types.js";
import { loadApiAccess } from "../kube/kubeconfig.js";
import { detectionCache } from "./records.js";
import type { PluginRequest } from "./request.js";

/**
 * STATUS: can ADD work? Only local facts, so an API server blip never marks the node's
 * network not ready: the kubeconfig loads and has credentials, and the restore binaries
 * of the backend ADD would use are there.
 */
export async function status(request: PluginRequest): Promise<void> {
  const { conf } = request;
  const problems: string[] = [];
  try {
    await loadApiAccess(conf.kubernetes.kubeconfig);
  } catch (error) {
    problems.push((error as Error).message);
  }
  const backend = await resolveBackend(conf.linkerd["iptables-mode"], hostSaveProbe, detectionCache(conf.state_dir));
  const families: Family[] = conf.linkerd.ipv6 ? ["ipv4", "ipv6"] : ["ipv4"];
  for (const family of families) {
    const binary = binaryName(backend, family, "restore");
    if (!binaryAvailable(binary)) problems.push(`${binary} not found for iptables backend ${backend}`);
  }
  if (problems.length > 0) {
    throw new CniError(ErrorCode.pluginNotAvailable, `meshcni cannot serve ADD: ${problems.join("; ")}`);
  }
}
