import { resolveBackend } from "../iptables/backend.js";
import { fileDetectionCache } from "../iptables/detection-cache.js";
import { binaryAvailable, hostSaveProbe } from "../iptables/exec.js";
import { loadApiAccess } from "../kube/kubeconfig.js";
import type { Logger } from "../log.js";
import type { NetConf } from "../mesh/netconf.js";
import { checkPodNetns, inNetns } from "../netns/enter.js";
import { createRedirector } from "../redirector.js";
import { fileRecordStore, locksDir } from "../state/records.js";
import type { PluginDeps } from "./request.js";

const backendOf = (conf: NetConf) =>
  resolveBackend(conf.linkerd["iptables-mode"], hostSaveProbe, fileDetectionCache(conf.state_dir), binaryAvailable);

/** The real I/O: the API, the host's iptables binaries or nf_tables, setns, the state dir. */
export function productionDeps(log: Logger): PluginDeps {
  return {
    log,
    // Loaded only by the verbs that call the API: it is most of the bundle.
    kubeReader: async (options) => (await import("../kube/pod-reader.js")).createKubeReader(options),
    agentReader: async (socket, timeoutMs) => (await import("../kube/agent-reader.js")).createAgentReader(socket, timeoutMs),
    checkKubeconfig: async (path) => void (await loadApiAccess(path)),
    backend: backendOf,
    async redirector(conf) {
      const backend = await backendOf(conf);
      if (backend === "nftables" && conf.linkerd["iptables-mode"] === "auto")
        log.info("no iptables binaries on this host: using nftables over netlink");
      return createRedirector(backend, { wait: conf.linkerd["use-wait-flag"], lockDir: locksDir(conf.state_dir) });
    },
    binaryAvailable,
    checkNetns: checkPodNetns,
    inNetns,
    records: fileRecordStore,
  };
}
