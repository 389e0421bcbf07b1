import { parse } from "smol-toml";

/** Where a container runtime reads CNI configs and binaries, and keeps pod netns, by its own config file. */
export interface RuntimeCni {
  runtime: "containerd" | "cri-o";
  file: string;
  confDir: string;
  binDirs: string[];
  netnsDir: string;
}

type Table = Record<string, unknown>;
const table = (value: unknown): Table => (value && typeof value === "object" && !Array.isArray(value) ? (value as Table) : {});
const text = (value: unknown, fallback: string): string => (typeof value === "string" && value !== "" ? value : fallback);
const texts = (value: unknown): string[] | undefined =>
  Array.isArray(value) && value.every((item) => typeof item === "string") && value.length > 0 ? (value as string[]) : undefined;
const trimSlash = (path: string) => (path.length > 1 ? path.replace(/\/+$/, "") : path);

/**
 * containerd's CNI dirs from its config.toml: version 3 (containerd 2.x) under
 * io.containerd.cri.v1.runtime, version 2 under io.containerd.grpc.v1.cri, version 1
 * under cri; containerd's defaults where unset. Its netns are under /var/run/netns, or
 * under its CRI state dir with netns_mounts_under_state_dir. Throws on invalid TOML.
 */
export function containerdCni(file: string, source: string): RuntimeCni {
  const config = parse(source) as Table;
  const version = Number(config.version ?? 1);
  const plugins = table(config.plugins);
  const criName = version >= 3 ? "io.containerd.cri.v1.runtime" : version === 2 ? "io.containerd.grpc.v1.cri" : "cri";
  const cri = table(plugins[criName]);
  const cni = table(cri.cni);
  const state = text(config.state, "/run/containerd");
  // The CRI plugin keeps its state under its 1.x id in every version.
  const criState = `${state}/io.containerd.grpc.v1.cri`;
  return {
    runtime: "containerd",
    file,
    confDir: trimSlash(text(cni.conf_dir, "/etc/cni/net.d")),
    binDirs: (texts(cni.bin_dirs) ?? [text(cni.bin_dir, "/opt/cni/bin")]).map(trimSlash),
    netnsDir: cri.netns_mounts_under_state_dir === true ? `${criState}/netns` : "/var/run/netns",
  };
}

/** CRI-O's CNI dirs from crio.conf ([crio.network] network_dir, plugin_dirs); its defaults where unset. */
export function crioCni(file: string, source: string): RuntimeCni {
  const crio = table((parse(source) as Table).crio);
  const network = table(crio.network);
  return {
    runtime: "cri-o",
    file,
    confDir: trimSlash(text(network.network_dir, "/etc/cni/net.d")),
    binDirs: (texts(network.plugin_dirs) ?? ["/opt/cni/bin"]).map(trimSlash),
    netnsDir: `${trimSlash(text(table(crio.runtime).namespaces_dir, "/var/run"))}/netns`,
  };
}

/** The runtimes' config files, each with its reader, in the order a node is looked at. */
export const runtimeConfigs = [
  { path: "/etc/containerd/config.toml", read: containerdCni },
  { path: "/etc/crio/crio.conf", read: crioCni },
] as const;
