import { describe, expect, it } from "vitest";
import { activeConfig, parseConfig } from "../../../src/cni/config-dir.js";

const _entry = { name: "meshcni", type: "meshcni", kubernetes: { kubeconfig: "/etc/cni/net.d/ZZZ-meshcni-kubeconfig" } };
const file = (name: string, json: unknown) => ({ name, text: typeof json === "string" ? json : JSON.stringify(json) });
const calico = {
  cniVersion: "1.0.0",
  name: "k8s-pod-network",
  plugins: [{ type: "calico" }, { type: "portmap", capabilities: { portMappings: true } }],
};

describe("choosing the active config", () => {
  it("takes the lexicographically first config file, as containerd does, even when it does not load", () => {
    const files = [file("10-calico.conflist", calico), file("00-notes.txt", "x"), file("07-empty.conflist", { plugins: [] })];
    expect(activeConfig(files)).toMatchObject({ file: { name: "07-empty.conflist" }, config: { valid: false } });
    expect(activeConfig([...files, file("01-bridge.conf", { type: "bridge" })])).toMatchObject({
      file: { name: "01-bridge.conf" },
      config: { valid: true },
    });
    expect(activeConfig([file("notes.txt", "x")])).toBeUndefined();
  });

  it("says why a file does not load", () => {
    expect(parseConfig(file("a.conflist", "{"))).toMatchObject({ valid: false, reason: expect.stringContaining("not valid JSON") });
    expect(parseConfig(file("a.conflist", { plugins: [{ name: "no type" }] }))).toMatchObject({
      valid: false,
      reason: "every plugin needs a type",
    });
    expect(parseConfig(file("a.conf", []))).toMatchObject({ valid: false, reason: "not a JSON object" });
  });
});
