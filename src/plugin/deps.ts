import { binaryAvailable, hostBackend, hostPaths, pluginRedirector } from "../host.js";
import { loadApiAccess } from "../kube/kubeconfig.js";
import type { Logger } from "../log.js";
import { checkPodNetns, inNetns, type NetnsId } from "../netns/enter.js";
import { fileRecordStore } from "../state/records.js";
import { closingLater } from "./apply.js";
import type { PluginDeps } from "./request.js";

/**
 * The real I/O: the API, the host's iptables binaries or nf_tables, setns, the state dir.
 * The agent's writer passes where the host's / is (`root`) and the netns the plugin opened
 * (`netnsId`): it acts on the host's paths as seen from its container, and only on that netns;
 * it closes redirectors after answering (`closeLater`).
 */
export function productionDeps(
  log: Logger,
  host: { root?: string; netnsId?: NetnsId; closeLater?: (close: () => void) => void } = {},
): PluginDeps {
  const onHost = hostPaths(host.root ?? "");
  const { closeLater } = host;
  return {
    log,
    // Loaded only by the verbs that call the API: it is most of the bundle.
    kubeReader: async (options) => (await import("../kube/pod-reader.js")).createKubeReader(options),
    agentReader: async (socket, timeoutMs) => (await import("../kube/agent-reader.js")).createAgentReader(socket, timeoutMs),
    checkKubeconfig: async (path) => void (await loadApiAccess(path)),
    backend: (conf) => hostBackend(conf, host.root),
    redirector: async (conf) => {
      const settings = { mode: conf.linkerd["iptables-mode"], stateDir: onHost(conf.state_dir), wait: conf.linkerd["use-wait-flag"] };
      const redirector = await pluginRedirector(settings, log);
      return closeLater ? closingLater(redirector, closeLater) : redirector;
    },
    binaryAvailable,
    checkNetns: checkPodNetns,
    inNetns: (path, action) => inNetns(onHost(path), action, host.netnsId),
    records: (stateDir) => fileRecordStore(onHost(stateDir)),
  };
}
