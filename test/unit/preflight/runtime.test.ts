import { describe, expect, it } from "vitest";
import { containerdCni, crioCni } from "../../../src/preflight/runtime.js";

describe("reading a runtime's CNI dirs from its config", () => {
  it("containerd 1.x (version 2): the CRI plugin's cni table; netns under its state dir when asked", () => {
    const source = `version = 2
[plugins."io.containerd.grpc.v1.cri"]
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni/"
    conf_dir = "/etc/cni/conf.d"
`;
    expect(containerdCni("/etc/containerd/config.toml", source)).toEqual({
      runtime: "containerd",
      file: "/etc/containerd/config.toml",
      confDir: "/etc/cni/conf.d",
      binDirs: ["/usr/lib/cni"],
      netnsDir: "/run/containerd/io.containerd.grpc.v1.cri/netns",
    });
  });

  it("containerd 2.x (version 3): the runtime plugin's bin_dirs", () => {
    const source = `version = 3
state = "/var/run/containerd"
[plugins."io.containerd.cri.v1.runtime".cni]
  bin_dirs = ["/opt/cni/bin", "/usr/libexec/cni"]
`;
    expect(containerdCni("f", source)).toMatchObject({
      confDir: "/etc/cni/net.d",
      binDirs: ["/opt/cni/bin", "/usr/libexec/cni"],
      netnsDir: "/var/run/netns",
    });
  });

  it("containerd's defaults for an empty or version 1 config", () => {
    expect(containerdCni("f", "")).toMatchObject({ confDir: "/etc/cni/net.d", binDirs: ["/opt/cni/bin"], netnsDir: "/var/run/netns" });
    expect(containerdCni("f", '[plugins.cri.cni]\nconf_dir = "/k3s/cni"')).toMatchObject({ confDir: "/k3s/cni" });
  });

  it("CRI-O: [crio.network] network_dir and plugin_dirs", () => {
    const source = `[crio.network]
network_dir = "/etc/cni/net.d/"
plugin_dirs = ["/opt/cni/bin/", "/usr/libexec/cni/"]
`;
    expect(crioCni("/etc/crio/crio.conf", source)).toMatchObject({
      runtime: "cri-o",
      confDir: "/etc/cni/net.d",
      binDirs: ["/opt/cni/bin", "/usr/libexec/cni"],
      netnsDir: "/var/run/netns",
    });
  });

  it("throws on a file that is not TOML", () => {
    expect(() => containerdCni("f", "version = = 2")).toThrow();
  });
});
