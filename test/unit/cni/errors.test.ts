import { describe, expect, it } from "vitest";
import { CniError, ErrorCode } from "../../../src/cni/errors.js";

describe("the CNI error", () => {
  it("is the spec's error object on stdout: the config's cniVersion, the code, msg and details", () => {
    const error = new CniError(ErrorCode.redirectMismatch, "redirect differs from the plan", "ipv4: chain PROXY_INIT_OUTPUT is missing");
    expect(error.toJSON("1.1.0")).toEqual({
      cniVersion: "1.1.0",
      code: 100,
      msg: "redirect differs from the plan",
      details: "ipv4: chain PROXY_INIT_OUTPUT is missing",
    });
    expect(JSON.parse(JSON.stringify(new CniError(ErrorCode.tryAgainLater, "later").toJSON("0.4.0")))).toEqual({
      cniVersion: "0.4.0",
      code: 11,
      msg: "later",
      details: "",
    });
  });

  it("carries an empty details unless given, and reads as a CniError where it is printed whole", () => {
    const error = new CniError(ErrorCode.invalidEnvironment, "CNI_COMMAND is missing");
    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({ code: 4, message: "CNI_COMMAND is missing", details: "" });
    expect(String(error)).toBe("CniError: CNI_COMMAND is missing");
  });

  it("uses the specification's numbers, and meshcni's own from 100", () => {
    expect(ErrorCode).toEqual({
      incompatibleVersion: 1,
      unsupportedField: 2,
      unknownContainer: 3,
      invalidEnvironment: 4,
      ioFailure: 5,
      decodeFailure: 6,
      invalidNetworkConfig: 7,
      tryAgainLater: 11,
      pluginNotAvailable: 50,
      pluginNotAvailableLimited: 51,
      redirectMismatch: 100,
    });
  });
});
