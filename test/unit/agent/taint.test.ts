import { describe, expect, it } from "vitest";
import { parseTaint } from "../../../src/agent/taint.js";

describe("startup taint", () => {
  it("reads kubectl's key[=value][:Effect]", () => {
    expect(parseTaint("meshcni.io/not-ready")).toEqual({ key: "meshcni.io/not-ready", effect: "NoSchedule" });
    expect(parseTaint("meshcni.io/not-ready=true:NoExecute")).toEqual({ key: "meshcni.io/not-ready", value: "true", effect: "NoExecute" });
    expect(() => parseTaint("a:Sometimes")).toThrow(/--startup-taint/);
    expect(() => parseTaint("bad key")).toThrow(/--startup-taint/);
  });
});
