import { join } from "node:path";
import { hostPaths } from "../host.js";

/**
 * What the installer puts on the host and where: host paths as configs name them, read
 * and written under hostRoot (where the agent's container mounts the host's /).
 */
export interface InstallOptions {
  hostRoot: string;
  netDir: string;
  binDir: string;
  /** More dirs the runtime finds plugins in (containerd's bin_dirs, CRI-O's plugin_dirs), read only to check the chain. */
  extraBinDirs: string[];
  kubeconfigName: string;
  /** The plugin's netconf entry (Linkerd's CNI_NETWORK_CONFIG), or the file holding it; neither: Linkerd's chart defaults. */
  template: string | undefined;
  templateFile: string | undefined;
  /** The binary to install (the agent's own executable). */
  sourceBinary: string;
  /** The plugin's state_dir, removed at an uninstall. */
  stateDir: string;
  /** Where the plugin asks the agent, written into the entry; undefined: the plugin asks the API itself. */
  agentSocket: string | undefined;
}

/** Where the installer reads and writes, inside the agent's container, and how configs name them. */
export function installPaths(options: InstallOptions) {
  const onHost = hostPaths(options.hostRoot);
  const netDir = onHost(options.netDir);
  return {
    netDir,
    binDir: onHost(options.binDir),
    /** Every dir the runtime looks for plugins in, the one meshcni installs to first. */
    pluginDirs: [options.binDir, ...options.extraBinDirs].map(onHost),
    kubeconfig: join(netDir, options.kubeconfigName),
    kubeconfigOnHost: join(options.netDir, options.kubeconfigName),
    stateDir: onHost(options.stateDir),
    agentSocket: options.agentSocket === undefined ? undefined : onHost(options.agentSocket),
  };
}

export type InstallPaths = ReturnType<typeof installPaths>;
