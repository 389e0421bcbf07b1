import { describe, expect, it } from "vitest";
import { describeApiFailure } from "../../../src/kube/errors.js";

describe("API failure classification", () => {
  it("gives up at once on answers that will not change", () => {
    expect(describeApiFailure({ code: 401 })).toEqual({ cause: expect.stringContaining("401 Unauthorized"), retryable: false });
    expect(describeApiFailure({ code: 403 })).toEqual({ cause: expect.stringContaining("403 Forbidden"), retryable: false });
    expect(describeApiFailure({ code: 404 })).toEqual({ cause: "404 Not Found", retryable: false });
  });

  it("retries the server's passing trouble, timeouts and refused connections", () => {
    expect(describeApiFailure({ code: 500 })).toEqual({ cause: "HTTP 500 from the API server", retryable: true });
    expect(describeApiFailure({ code: 429 }).retryable).toBe(true);
    expect(describeApiFailure(Object.assign(new Error("aborted"), { name: "AbortError" }))).toEqual({
      cause: "timed out waiting for the API server",
      retryable: true,
    });
    expect(describeApiFailure(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:6443"), { code: "ECONNREFUSED" }))).toEqual({
      cause: "ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:6443",
      retryable: true,
    });
  });

  it("calls certificate failures TLS and does not retry them", () => {
    const failure = describeApiFailure(Object.assign(new Error("self-signed certificate"), { code: "DEPTH_ZERO_SELF_SIGNED_CERT" }));
    expect(failure).toEqual({ cause: "TLS: self-signed certificate", retryable: false });
  });
});
