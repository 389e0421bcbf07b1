import { binaryAvailable, hostBackend, hostPaths, pluginRedirector } from "../host.js";
import { loadApiAccess } from "../kube/kubeconfig.js";
import type { Logger } from "../log.js";
import { checkPodNetns, inNetns, type NetnsId } from "../netns/enter.js";
import type { Redirector } from "../redirect/redirector.js";
import { fileRecordStore } from "../state/records.js";
import type { PluginDeps } from "./request.js";

/**
 * The redirector with its close() left to `later`: a process that outlives the verb answers
 * first, then closes. Closing an nf_tables socket waits for the kernel's destroy work after
 * any table deletion on the node (an RCU grace period, ~10 ms here).
 */
function closingLater(redirector: Redirector, later: (close: () => void) => void): Redirector {
  return { ...redirector, close: () => later(() => redirector.close()) };
}

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
    agentReader: async (socket, timeoutMs) => {
      const [{ createAgentReader }, { verifiedConnector }] = await Promise.all([
        import("../kube/agent-reader.js"),
        import("../kube/verified-connector.js"),
      ]);
      return createAgentReader(socket, timeoutMs, verifiedConnector(timeoutMs));
    },
    checkKubeconfig: async (path) => void (await loadApiAccess(path)),
    backend: (conf) => hostBackend(conf, host.root),
    redirector: async (settings) => {
      const redirector = await pluginRedirector({ ...settings, stateDir: onHost(settings.stateDir) }, log);
      return closeLater ? closingLater(redirector, closeLater) : redirector;
    },
    binaryAvailable,
    checkNetns: checkPodNetns,
    inNetns: (path, action) => inNetns(onHost(path), action, host.netnsId),
    records: (stateDir) => fileRecordStore(onHost(stateDir)),
  };
}
