import { describe, expect, it } from "vitest";
import { parseCniArgs, podIdentity } from "../../../src/cni/args.js";
import { cniErrorCode } from "../../kit/fixtures.js";

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
});
