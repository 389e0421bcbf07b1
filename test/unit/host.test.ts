import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { hostBackend, resolveBackend } from "../../src/host.js";
import { parseNetConf } from "../../src/mesh/netconf.js";
import { probeWith } from "../kit/fixtures.js";

describe("backend resolution", () => {
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

describe("the backend ADD and the audit use", () => {
  it("is read from the netconf's state_dir under the host root: the detection the plugin cached", async () => {
    const hostRoot = mkdtempSync(join(tmpdir(), "meshcni-host-"));
    try {
      mkdirSync(join(hostRoot, "plugin-state"), { recursive: true });
      writeFileSync(join(hostRoot, "plugin-state", "iptables-backend"), "legacy\n");
      const conf = parseNetConf(JSON.stringify({ cniVersion: "1.0.0", name: "k8s", type: "meshcni", state_dir: "/plugin-state" }));
      expect(await hostBackend(conf, hostRoot)).toBe("legacy");
    } finally {
      rmSync(hostRoot, { recursive: true, force: true });
    }
  });
});
