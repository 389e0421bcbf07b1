import { describe, expect, it } from "vitest";
import { activeConfig, parseConfig } from "../../../src/cni/config-dir.js";
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
});
