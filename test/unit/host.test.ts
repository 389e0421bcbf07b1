import { describe, expect, it } from "vitest";
import { resolveBackend } from "../../src/host.js";

describe("backend resolution", () => {
  const probeWith = (outputs: Record<string, string>) => {
    const calls: string[] = [];
    const probe = async (binary: string, args: string[]) => {
      calls.push([binary, ...args].join(" "));
      return outputs[binary] ?? "";
    };
    return { probe, calls };
  };

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
});
