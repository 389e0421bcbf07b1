import { describe, expect, it } from "vitest";
import { parseCniArgs, podIdentity } from "../../../src/cni/args.js";
import { CniError } from "../../../src/cni/errors.js";
import { cniErrorCode } from "../../kit/fixtures.js";

/** The CNI error `action` throws: its code and message. */
function refusal(action: () => unknown): { code: number; msg: string } {
  try {
    action();
  } catch (error) {
    if (error instanceof CniError) return { code: error.code, msg: error.message };
    throw error;
  }
  throw new Error("expected a CNI error");
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
    expect(cniErrorCode(() => parseCniArgs("K8S_POD_NAME=web;EXTRA=1"))).toBe(4);
    expect(parseCniArgs("IgnoreUnknown=true;EXTRA=1").get("EXTRA")).toBe("1");
  });

  it("refuses values holding '=', pairs without one, and half an identity", () => {
    expect(cniErrorCode(() => parseCniArgs("K8S_POD_NAME=a=b"))).toBe(4);
    expect(cniErrorCode(() => parseCniArgs("K8S_POD_NAME"))).toBe(4);
    expect(cniErrorCode(() => podIdentity(parseCniArgs("K8S_POD_NAME=web")))).toBe(4);
  });

  it("takes the keys Kubernetes runtimes pass, IgnoreUnknown among them, without IgnoreUnknown set", () => {
    const args = parseCniArgs("IgnoreUnknown=0;K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web;K8S_POD_INFRA_CONTAINER_ID=abc;K8S_POD_UID=u1");
    expect(Object.fromEntries(args)).toEqual({
      IgnoreUnknown: "0",
      K8S_POD_NAMESPACE: "shop",
      K8S_POD_NAME: "web",
      K8S_POD_INFRA_CONTAINER_ID: "abc",
      K8S_POD_UID: "u1",
    });
  });

  it("allows unknown keys for IgnoreUnknown 1 or true in any case, and for nothing else", () => {
    for (const value of ["1", "true", "TRUE", "True"]) expect(parseCniArgs(`IgnoreUnknown=${value};EXTRA=x`).get("EXTRA")).toBe("x");
    for (const value of ["0", "false", "10", "01", "truex", "untrue", ""]) {
      expect(refusal(() => parseCniArgs(`IgnoreUnknown=${value};EXTRA=x`))).toEqual({
        code: 4,
        msg: 'unknown CNI_ARGS key "EXTRA" (set IgnoreUnknown=1 to allow it)',
      });
    }
  });

  it("names the pair it cannot read, even with IgnoreUnknown set, and the half of a pod it was given", () => {
    expect(refusal(() => parseCniArgs("IgnoreUnknown=1;=x"))).toEqual({ code: 4, msg: 'invalid CNI_ARGS pair "=x": expected KEY=VALUE' });
    expect(refusal(() => parseCniArgs("K8S_POD_NAME=a=b")).msg).toBe('invalid CNI_ARGS pair "K8S_POD_NAME=a=b": expected KEY=VALUE');
    expect(refusal(() => podIdentity(parseCniArgs("K8S_POD_NAMESPACE=shop")))).toEqual({
      code: 4,
      msg: 'CNI_ARGS names half a pod: K8S_POD_NAMESPACE="shop" K8S_POD_NAME=""',
    });
    expect(refusal(() => podIdentity(parseCniArgs("K8S_POD_NAME=web"))).msg).toBe(
      'CNI_ARGS names half a pod: K8S_POD_NAMESPACE="" K8S_POD_NAME="web"',
    );
  });

  it("has no UID when the runtime passes none, or an empty one", () => {
    expect(podIdentity(parseCniArgs("K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web"))).toStrictEqual({ namespace: "shop", name: "web" });
    expect(podIdentity(parseCniArgs("K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web;K8S_POD_UID="))).toStrictEqual({
      namespace: "shop",
      name: "web",
    });
  });
});
