import { describe, expect, it } from "vitest";
import { expiredTokenCause } from "../../../src/kube/token-expiry.js";

const jwt = (claims: Record<string, unknown>) =>
  ["{}", JSON.stringify(claims), "signature"].map((part, index) => (index < 2 ? Buffer.from(part).toString("base64url") : part)).join(".");

describe("a refused token that says it expired", () => {
  const now = Date.parse("2026-11-28T07:00:00Z");

  it("names when it expired and who renews it", () => {
    expect(expiredTokenCause(jwt({ exp: now / 1000 - 90 }), now)).toBe(
      "401 Unauthorized: the kubeconfig's token expired at 2026-11-28T06:58:30.000Z (90 s ago): " +
        "meshcni's agent renews it while it runs on this node; is it running?",
    );
  });

  it("says nothing of a token still valid by its claims, without exp, or no JWT at all", () => {
    expect(expiredTokenCause(jwt({ exp: now / 1000 + 60 }), now)).toBeUndefined();
    expect(expiredTokenCause(jwt({ sub: "x" }), now)).toBeUndefined();
    expect(expiredTokenCause(jwt({ exp: "soon" }), now)).toBeUndefined();
    expect(expiredTokenCause("opaque-token", now)).toBeUndefined();
    expect(expiredTokenCause("a.%%%.c", now)).toBeUndefined();
    expect(expiredTokenCause(undefined, now)).toBeUndefined();
  });
});
