import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  activeConfig,
  brokenConfigReason,
  isConfigName,
  isNetDirFile,
  loadOrder,
  parseConfig,
  readConfigFiles,
} from "../../../src/cni/config-dir.js";
import { calicoConflist, configFile } from "../../kit/fixtures.js";

describe("choosing the active config", () => {
  it("takes the lexicographically first config file, as containerd does, even when it does not load", () => {
    const files = [
      configFile("10-calicoConflist.conflist", calicoConflist),
      configFile("00-notes.txt", "x"),
      configFile("07-empty.conflist", { plugins: [] }),
    ];
    expect(activeConfig(files)).toMatchObject({ file: { name: "07-empty.conflist" }, config: { valid: false } });
    expect(activeConfig([...files, configFile("01-bridge.conf", { type: "bridge" })])).toMatchObject({
      file: { name: "01-bridge.conf" },
      config: { valid: true },
    });
    expect(activeConfig([configFile("notes.txt", "x")])).toBeUndefined();
  });

  it("says why a file does not load", () => {
    expect(parseConfig(configFile("a.conflist", "{"))).toMatchObject({ valid: false, reason: expect.stringContaining("not valid JSON") });
    expect(parseConfig(configFile("a.conflist", { plugins: [{ name: "no type" }] }))).toMatchObject({
      valid: false,
      reason: "every plugin needs a type",
    });
    expect(parseConfig(configFile("a.conf", []))).toMatchObject({ valid: false, reason: "not a JSON object" });
  });

  it("reads the configs in name order, and nothing but .conf, .conflist and .json files", () => {
    const names = ["20-b.conflist", "99-x.json", "00-a.conf", "10-c.conflist", "05-cilium.conflist.cilium_bak", "README"];
    expect(loadOrder(names.map((name) => configFile(name, {}))).map((file) => file.name)).toEqual([
      "00-a.conf",
      "10-c.conflist",
      "20-b.conflist",
      "99-x.json",
    ]);
    expect(["a.conf", "a.conflist", "a.json", "a.conf.bak", "json", "a.jsonl"].map(isConfigName)).toEqual([
      true,
      true,
      true,
      false,
      false,
      false,
    ]);
  });

  it("reads a config set aside under one more suffix as the kind its own name says", () => {
    const setAside = ["05-cilium.conflist.cilium_bak", "10-calico.conflist.bak", "10-bridge.conf.disabled", "99-x.json.my-old"];
    expect(setAside.map(isNetDirFile)).toEqual([true, true, true, true]);
    expect(["notes.txt", ".conflist.bak", "10-calico.conflist.old.bak", "10-calico.conflist.b@k"].map(isNetDirFile)).toEqual([
      false,
      false,
      false,
      false,
    ]);
    expect(parseConfig(configFile("05-cilium.conflist.cilium_bak", { name: "c", plugins: [{ type: "cilium-cni" }] }))).toMatchObject({
      valid: true,
      kind: "conflist",
    });
    expect(parseConfig(configFile("10-bridge.conf.disabled", { type: "bridge" }))).toMatchObject({ valid: true, kind: "conf" });
  });

  it("says why a list or a single config does not load", () => {
    const reason = (name: string, json: unknown) => {
      const parsed = parseConfig(configFile(name, json));
      return parsed.valid ? "valid" : parsed.reason;
    };
    expect(reason("a.conflist", { plugins: [] })).toBe("a .conflist needs a non-empty plugins list");
    expect(reason("a.conflist", { plugins: { type: "bridge" } })).toBe("a .conflist needs a non-empty plugins list");
    expect(reason("a.conflist", { plugins: [{ type: "bridge" }, { type: "" }] })).toBe("every plugin needs a type");
    expect(reason("a.conflist", { plugins: [{ type: "bridge" }, "portmap"] })).toBe("every plugin needs a type");
    for (const json of [{}, { type: "" }, { type: 5 }]) expect(reason("a.conf", json)).toBe("a .conf needs a type");
    expect(reason("a.json", { type: "bridge" })).toBe("valid");
    expect(brokenConfigReason("05-x.conflist", "every plugin needs a type")).toBe(
      "05-x.conflist is not a valid CNI config (every plugin needs a type): containerd fails to load the CNI config dir until it is fixed or removed",
    );
  });
});

describe("reading the net dir", () => {
  const dir = mkdtempSync(join(tmpdir(), "meshcni-netdir-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("reads its configs and those set aside, skips one gone before it is read, and skips a directory named as one, saying so", () => {
    writeFileSync(join(dir, "10-calico.conflist"), '{"plugins":[]}');
    writeFileSync(join(dir, "05-cilium.conflist.cilium_bak"), "{}");
    writeFileSync(join(dir, "notes.txt"), "x");
    symlinkSync(join(dir, "removed.conflist"), join(dir, "20-gone.conflist"));
    const files = readConfigFiles(dir);
    expect(files.map(({ name, text }) => ({ name, text })).sort((a, b) => a.name.localeCompare(b.name))).toEqual([
      { name: "05-cilium.conflist.cilium_bak", text: "{}" },
      { name: "10-calico.conflist", text: '{"plugins":[]}' },
    ]);
    expect(files.every((file) => typeof file.modifiedMs === "number" && file.modifiedMs > 0 && file.mode === 0o644)).toBe(true);
    mkdirSync(join(dir, "30-dir.conf"));
    writeFileSync(join(dir, "40-huge.conflist"), Buffer.alloc((1 << 20) + 1, 32));
    const skipped: string[] = [];
    expect(readConfigFiles(dir, (name, why) => skipped.push(`${name}: ${why}`)).map((file) => file.name)).toHaveLength(2);
    expect(skipped.sort()).toEqual([
      expect.stringMatching(/^30-dir\.conf: .*30-dir\.conf is a directory, not a regular file$/),
      expect.stringMatching(/^40-huge\.conflist: .* is larger than 1048576 bytes$/),
    ]);
  });
});
