import { binaryAvailable, hostBackend, pluginRedirector } from "../host.js";
import { loadApiAccess } from "../kube/kubeconfig.js";
import type { Logger } from "../log.js";
import { checkPodNetns, inNetns } from "../netns/enter.js";
import { fileRecordStore } from "../state/records.js";
import type { PluginDeps } from "./request.js";

/** The real I/O: the API, the host's iptables binaries or nf_tables, setns, the state dir. */
export function productionDeps(log: Logger): PluginDeps {
  return {
    log,
    // Loaded only by the verbs that call the API: it is most of the bundle.
    kubeReader: async (options) => (await import("../kube/pod-reader.js")).createKubeReader(options),
    agentReader: async (socket, timeoutMs) => (await import("../kube/agent-reader.js")).createAgentReader(socket, timeoutMs),
    checkKubeconfig: async (path) => void (await loadApiAccess(path)),
    backend: (conf) => hostBackend(conf),
    redirector: (conf) =>
      pluginRedirector({ mode: conf.linkerd["iptables-mode"], stateDir: conf.state_dir, wait: conf.linkerd["use-wait-flag"] }, log),
    binaryAvailable,
    checkNetns: checkPodNetns,
    inNetns,
    records: fileRecordStore,
  };
}
