import { defaultStateDir } from "../state/records.js";
import type { ManifestOptions } from "./options.js";

/** The agent's view of a host path: under its host root. */
const onHost = (path: string) => `/host${path}`;

/** One host path the agent's container mounts: the pod's volume and the container's mount of it. */
export interface HostMount {
  volume: { name: string; hostPath: { path: string; type: string } };
  mount: { name: string; mountPath: string; readOnly?: boolean; mountPropagation?: string };
}

/** The host paths the agent mounts, in the container's order; comments.ts finds each by its name. */
export function agentHostMounts(options: ManifestOptions): HostMount[] {
  const dir = (name: string, path: string, mount: Partial<HostMount["mount"]> = {}, type = "DirectoryOrCreate"): HostMount => ({
    volume: { name, hostPath: { path, type } },
    mount: { name, mountPath: onHost(path), ...mount },
  });
  return [
    dir("cni-net-dir", options.netDir),
    // One dir for both (some nodes keep configs and plugins together): one mount, as Kubernetes refuses two at one path.
    ...(options.binDir === options.netDir ? [] : [dir("cni-bin-dir", options.binDir)]),
    ...options.extraBinDirs.map((path, index) => dir(`cni-bin-dir-${index + 1}`, path, { readOnly: true }, "Directory")),
    dir("meshcni-state", defaultStateDir),
    dir("netns", options.netnsDir, { readOnly: true, mountPropagation: "HostToContainer" }),
    // The socket alone: its directory holds the runtime's shims' sockets too (each one the control of
    // containers). A runtime restarted makes a new socket, which this mount does not follow until
    // the agent's container restarts; meanwhile only pods without a record cannot be located.
    ...(options.criSocket ? [dir("cri-socket", options.criSocket, { readOnly: true }, "Socket")] : []),
  ];
}
