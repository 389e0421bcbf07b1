import { describe, expect, it } from "vitest";
import { TokenRefusal } from "../../../src/agent/token-refusal.js";
import { ApiStatusError } from "../../../src/kube/errors.js";

describe("telling that the API server refuses the agent's token", () => {
  const unauthorized = new ApiStatusError(401, "Unauthorized", undefined);
  const refusal = () => {
    const changes: boolean[] = [];
    const found = new TokenRefusal(
      (refused) => changes.push(refused),
      () => new Date("2026-11-28T06:00:00Z"),
    );
    return { found, changes };
  };

  it("is refused from a 401 on, saying since when and what mends it, until a request sent later is accepted", () => {
    const { found, changes } = refusal();
    found.heard(1);
    expect(found.problem()).toBeUndefined();
    found.heard(2, unauthorized);
    found.heard(3, unauthorized);
    expect(found.problem()).toMatch(/^the API server refuses the agent's token \(401 Unauthorized\) since 2026-11-28T06:00:00.000Z: /);
    expect(found.problem()).toContain("rollout restart daemonset");
    found.heard(4);
    expect(found.problem()).toBeUndefined();
    expect(changes).toEqual([true, false]);
  });

  it("takes no word from a request sent before the one that changed it (a watch's headers late, an old token's last answers)", () => {
    const { found, changes } = refusal();
    found.heard(5, unauthorized);
    found.heard(4);
    expect(found.problem()).toBeDefined();
    found.heard(7);
    found.heard(6, unauthorized);
    expect(found.problem()).toBeUndefined();
    expect(changes).toEqual([true, false]);
  });

  it("takes any other failure for no word on the token (403, 500, a connection refused)", () => {
    const { found, changes } = refusal();
    found.heard(1, new ApiStatusError(403, "Forbidden", undefined));
    found.heard(2, new ApiStatusError(500, "boom", undefined));
    found.heard(3, Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }));
    expect(changes).toEqual([]);
    found.heard(4, unauthorized);
    found.heard(5, new Error("socket hang up"));
    expect(changes).toEqual([true]);
  });
});
