import { describe, expect, it } from "vitest";
import { cniConfigKey, loadedDefaultChain } from "../../../src/cri/loaded-config.js";

/** containerd 2.2.9's `cniconfig` on the test cluster, trimmed: loopback, then the primary with meshcni's probe as a drop-in. */
const plugin = (source: object) => ({ Network: { type: (source as { type: string }).type }, Source: JSON.stringify(source) });
const loaded = (networks: object[], prefix = "eth") =>
  JSON.stringify({
    PluginDirs: ["/opt/cni/bin"],
    PluginConfDir: "/etc/cni/net.d",
    PluginMaxConfNum: 1,
    Prefix: prefix,
    Networks: networks,
  });
const loopback = { Config: { Name: "cni-loopback", CNIVersion: "0.3.1", Plugins: [plugin({ type: "loopback" })] }, IFName: "lo" };
const primary = (ifName: string) => ({
  Config: {
    Name: "k8s-pod-network",
    CNIVersion: "1.0.0",
    Plugins: [plugin({ type: "bridge", bridge: "br0" }), plugin({ type: "portmap" }), plugin({ type: "meshcni", probe: true })],
  },
  IFName: ifName,
});

describe("the chain the runtime says it loaded (CRI Status verbose)", () => {
  it("reads the default network's plugins, each with the config it was loaded from", () => {
    const chain = loadedDefaultChain({ [cniConfigKey]: loaded([loopback, primary("eth0")]), golang: "go1.24" });
    expect(chain).toEqual({
      network: "k8s-pod-network",
      plugins: [
        { type: "bridge", config: { type: "bridge", bridge: "br0" } },
        { type: "portmap", config: { type: "portmap" } },
        { type: "meshcni", config: { type: "meshcni", probe: true } },
      ],
    });
  });

  it("takes the default network by the runtime's interface prefix, not by its place", () => {
    expect(loadedDefaultChain({ [cniConfigKey]: loaded([primary("net0"), loopback], "net") })).toMatchObject({
      network: "k8s-pod-network",
    });
    expect(loadedDefaultChain({ [cniConfigKey]: loaded([loopback, primary("eth1")]) })).toEqual({
      unknown: "the container runtime has loaded no network for eth0",
    });
  });

  it("says why it cannot tell: no cniconfig (CRI-O), or one that is no JSON object", () => {
    expect(loadedDefaultChain({})).toEqual({ unknown: expect.stringContaining('has no "cniconfig"') });
    expect(loadedDefaultChain({ [cniConfigKey]: "[1]" })).toEqual({ unknown: `the container runtime's "cniconfig" is not a JSON object` });
    expect(loadedDefaultChain({ [cniConfigKey]: "{" })).toEqual({ unknown: `the container runtime's "cniconfig" is not a JSON object` });
  });

  it("keeps a plugin whose source does not parse, with no config", () => {
    const network = { Config: { Name: "n", Plugins: [{ Network: { type: "bridge" }, Source: "{" }] }, IFName: "eth0" };
    expect(loadedDefaultChain({ [cniConfigKey]: loaded([network]) })).toEqual({
      network: "n",
      plugins: [{ type: "bridge", config: undefined }],
    });
  });
});
