import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { NetnsClaims } from "../../../../src/agent/writers/netns-claims.js";

describe("the netns the node's records claim", () => {
  const dir = mkdtempSync(join(tmpdir(), "meshcni-claims-"));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const record = (name: string, uid: string, netns: string) =>
    writeFileSync(join(dir, `${name}_eth0.json`), JSON.stringify({ pod: { uid }, containerId: name, netns }));

  it("names each record's pod and sandbox by netns, following records made and removed; no dir is no claim", () => {
    const claims = new NetnsClaims(() => dir);
    record("c1", "u1", "/run/netns/a");
    record("c2", "u2", "/run/netns/b");
    writeFileSync(join(dir, "c3_eth0.json"), "not json");
    expect(claims.of("/run/netns/a")).toEqual([{ uid: "u1", containerId: "c1", netns: "/run/netns/a" }]);
    record("c4", "u4", "/run/netns/a");
    unlinkSync(join(dir, "c1_eth0.json"));
    expect(claims.of("/run/netns/a")).toEqual([{ uid: "u4", containerId: "c4", netns: "/run/netns/a" }]);
    expect(new NetnsClaims(() => join(dir, "none")).of("/run/netns/a")).toEqual([]);
  });
});
