import { describe, expect, it } from "vitest";
import { binaryName, detectBackend, resolveBackend } from "../../../src/iptables/backend.js";

describe("backend detection", () => {
  const probeWith = (outputs: Record<string, string>) => {
    const calls: string[] = [];
    const probe = async (binary: string, args: string[]) => {
      calls.push([binary, ...args].join(" "));
      return outputs[binary] ?? "";
    };
    return { probe, calls };
  };

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

  it("caches only an answer kubelet's chains decided", async () => {
    const written: string[] = [];
    const cache = { read: () => undefined, write: (backend: "legacy" | "nft") => void written.push(backend) };
    const legacy = probeWith({ "iptables-legacy-save": "*mangle\n:KUBE-IPTABLES-HINT - [0:0]\n" });
    expect(await resolveBackend("auto", legacy.probe, cache)).toBe("legacy");
    expect(await resolveBackend("auto", probeWith({}).probe, cache)).toBe("nft");
    expect(written).toEqual(["legacy"]);
    const cached = probeWith({});
    expect(await resolveBackend("auto", cached.probe, { read: () => "legacy", write: () => {} })).toBe("legacy");
    expect(cached.calls).toEqual([]);
    expect(await resolveBackend("plain", cached.probe, cache)).toBe("plain");
  });

  it("picks nftables on a host without iptables binaries, probing nothing; any of them means iptables", async () => {
    const none = probeWith({});
    expect(await resolveBackend("auto", none.probe, undefined, () => false)).toBe("nftables");
    expect(none.calls).toEqual([]);
    expect(await resolveBackend("auto", none.probe, undefined, (binary) => binary === "iptables-legacy-restore")).toBe("nft");
    expect(await resolveBackend("nftables", none.probe, undefined, () => true)).toBe("nftables");
  });

  it("names each backend's binaries", () => {
    expect(binaryName("legacy", "ipv6", "restore")).toBe("ip6tables-legacy-restore");
    expect(binaryName("nft", "ipv4", "save")).toBe("iptables-nft-save");
    expect(binaryName("plain", "ipv4", "restore")).toBe("iptables-restore");
  });
});
