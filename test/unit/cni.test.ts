import { describe, expect, it } from "vitest";
import { parseCniArgs, podIdentity } from "../../src/cni/args.js";
import { readCniEnv } from "../../src/cni/env.js";
import { CniError } from "../../src/cni/errors.js";
import { convertResult, resultAddresses } from "../../src/cni/result.js";
import { compareVersions, requireSupportedVersion, versionInfo } from "../../src/cni/version.js";

function codeOf(action: () => unknown): number | undefined {
  try {
    action();
  } catch (error) {
    return error instanceof CniError ? error.code : -1;
  }
  return undefined;
}

describe("CNI_ARGS", () => {
  it("reads containerd's pod identity", () => {
    const args = parseCniArgs("IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=web;K8S_POD_INFRA_CONTAINER_ID=abc;K8S_POD_UID=u1;");
    expect(podIdentity(args)).toEqual({ namespace: "ns", name: "web", uid: "u1" });
  });

  it("has no identity when the runtime names no pod", () => {
    expect(podIdentity(parseCniArgs(""))).toBeUndefined();
    expect(podIdentity(parseCniArgs(undefined))).toBeUndefined();
  });

  it("refuses unknown keys unless IgnoreUnknown is set", () => {
    expect(codeOf(() => parseCniArgs("K8S_POD_NAME=web;EXTRA=1"))).toBe(4);
    expect(parseCniArgs("IgnoreUnknown=true;EXTRA=1").get("EXTRA")).toBe("1");
  });

  it("refuses values holding '=', pairs without one, and half an identity", () => {
    expect(codeOf(() => parseCniArgs("K8S_POD_NAME=a=b"))).toBe(4);
    expect(codeOf(() => parseCniArgs("K8S_POD_NAME"))).toBe(4);
    expect(codeOf(() => podIdentity(parseCniArgs("K8S_POD_NAME=web")))).toBe(4);
  });
});

describe("CNI environment", () => {
  it("needs CNI_NETNS for ADD and CHECK but not DEL", () => {
    const base = { CNI_CONTAINERID: "c", CNI_IFNAME: "eth0" };
    expect(codeOf(() => readCniEnv({ ...base, CNI_COMMAND: "ADD" }))).toBe(4);
    expect(codeOf(() => readCniEnv({ ...base, CNI_COMMAND: "CHECK" }))).toBe(4);
    expect(readCniEnv({ ...base, CNI_COMMAND: "DEL" }).netns).toBe("");
  });

  it("refuses an unknown or missing command", () => {
    expect(codeOf(() => readCniEnv({ CNI_COMMAND: "UPDATE" }))).toBe(4);
    expect(codeOf(() => readCniEnv({}))).toBe(4);
  });

  it("needs nothing more for VERSION, STATUS and GC", () => {
    for (const command of ["VERSION", "STATUS", "GC"]) expect(readCniEnv({ CNI_COMMAND: command }).command).toBe(command);
  });
});

describe("versions", () => {
  it("answers VERSION with every supported version", () => {
    expect(versionInfo("0.4.0")).toEqual({ cniVersion: "0.4.0", supportedVersions: ["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"] });
    expect(versionInfo("9.9.9")).toMatchObject({ cniVersion: "1.1.0" });
  });

  it("refuses versions before chaining existed, and unknown ones, with code 1", () => {
    expect(codeOf(() => requireSupportedVersion("0.2.0"))).toBe(1);
    expect(codeOf(() => requireSupportedVersion(undefined))).toBe(1);
    expect(requireSupportedVersion("1.1.0")).toBe("1.1.0");
  });

  it("compares numerically", () => {
    expect(compareVersions("0.10.0", "0.4.0")).toBeGreaterThan(0);
    expect(compareVersions("1.0.0", "1.1.0")).toBeLessThan(0);
    expect(compareVersions("1.0", "1.0.0")).toBe(0);
  });
});

describe("result conversion", () => {
  const modern = {
    cniVersion: "1.0.0",
    interfaces: [{ name: "eth0", mac: "aa:bb:cc:dd:ee:ff", sandbox: "/var/run/netns/x" }],
    ips: [
      { address: "10.1.0.5/24", gateway: "10.1.0.1", interface: 0 },
      { address: "fd00::5/64", interface: 0 },
    ],
    routes: [{ dst: "0.0.0.0/0" }],
    dns: { nameservers: ["10.96.0.10"] },
  };

  it("adds each IP's version going down to 0.4.0 / 0.3.x and keeps everything else", () => {
    const old = convertResult(modern, "0.3.1");
    expect(old).toEqual({
      ...modern,
      cniVersion: "0.3.1",
      ips: [
        { version: "4", address: "10.1.0.5/24", gateway: "10.1.0.1", interface: 0 },
        { version: "6", address: "fd00::5/64", interface: 0 },
      ],
    });
  });

  it("drops the version going up to 1.x, round-tripping", () => {
    expect(convertResult(convertResult(modern, "0.4.0"), "1.1.0")).toEqual({ ...modern, cniVersion: "1.1.0" });
  });

  it("lists the addresses a result gives", () => {
    expect(resultAddresses(modern)).toEqual(["10.1.0.5/24", "fd00::5/64"]);
    expect(resultAddresses(undefined)).toEqual([]);
  });
});
