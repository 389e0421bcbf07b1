import { describe, expect, it } from "vitest";
import { compareVersions, requireSupportedVersion, versionInfo } from "../../../src/cni/version.js";
import { cniErrorCode } from "../../kit/fixtures.js";

describe("versions", () => {
  it("answers VERSION with every supported version", () => {
    expect(versionInfo("0.4.0")).toEqual({ cniVersion: "0.4.0", supportedVersions: ["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"] });
    expect(versionInfo("9.9.9")).toMatchObject({ cniVersion: "1.1.0" });
  });

  it("refuses versions before chaining existed, and unknown ones, with code 1", () => {
    expect(cniErrorCode(() => requireSupportedVersion("0.2.0"))).toBe(1);
    expect(cniErrorCode(() => requireSupportedVersion(undefined))).toBe(1);
    expect(requireSupportedVersion("1.1.0")).toBe("1.1.0");
    expect(() => requireSupportedVersion("0.2.0")).toThrow(
      'incompatible CNI version: config has cniVersion "0.2.0", meshcni supports 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0',
    );
  });

  it("compares numerically", () => {
    expect(compareVersions("0.10.0", "0.4.0")).toBeGreaterThan(0);
    expect(compareVersions("1.0.0", "1.1.0")).toBeLessThan(0);
    expect(compareVersions("1.0", "1.0.0")).toBe(0);
    expect(compareVersions("1.0", "1.0.1")).toBeLessThan(0);
    expect(compareVersions("1.1.0.1", "1.1.0")).toBeGreaterThan(0);
  });
});
