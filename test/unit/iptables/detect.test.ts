import { describe, expect, it } from "vitest";
import { binaryName } from "../../../src/iptables/binaries.js";
import { detectBackend } from "../../../src/iptables/detect.js";
import { probeWith } from "../../kit/fixtures.js";

describe("backend detection", () => {
  it("picks nft when kubelet's chains are in nft's mangle table", async () => {
    const { probe } = probeWith({ "iptables-nft-save": "*mangle\n:KUBE-IPTABLES-HINT - [0:0]\nCOMMIT\n" });
    expect(await detectBackend(probe)).toEqual({ backend: "nft", found: true });
  });

  it("picks legacy when kubelet's chains are in legacy's full dump (never -t mangle)", async () => {
    const { probe, calls } = probeWith({ "ip6tables-legacy-save": "*mangle\n:KUBE-KUBELET-CANARY - [0:0]\nCOMMIT\n" });
    expect(await detectBackend(probe)).toEqual({ backend: "legacy", found: true });
    expect(calls).toEqual(["iptables-nft-save -t mangle", "ip6tables-nft-save -t mangle", "iptables-legacy-save", "ip6tables-legacy-save"]);
  });

  it("prefers nft's answer when both have kubelet's chains, as the wrapper's order does", async () => {
    const hint = "*mangle\n:KUBE-IPTABLES-HINT - [0:0]\nCOMMIT\n";
    expect(await detectBackend(probeWith({ "ip6tables-nft-save": hint, "iptables-legacy-save": hint }).probe)).toEqual({
      backend: "nft",
      found: true,
    });
  });

  it("defaults to nft with no kubelet chains anywhere", async () => {
    expect(await detectBackend(probeWith({ "iptables-legacy-save": "*nat\n:KUBE-SERVICES - [0:0]\n" }).probe)).toEqual({
      backend: "nft",
      found: false,
    });
  });

  it("names each backend's binaries", () => {
    expect(binaryName("legacy", "ipv6", "restore")).toBe("ip6tables-legacy-restore");
    expect(binaryName("nft", "ipv4", "save")).toBe("iptables-nft-save");
    expect(binaryName("plain", "ipv4", "restore")).toBe("iptables-restore");
  });
});
