import { describe, expect, it } from "vitest";
import { hasIpv6, hostPort, perFamily } from "../../kit/cluster/families.js";
import { legs } from "../../kit/cluster/leg.js";

/** The real cluster's flags name one value per family the leg has, the primary family first. */
describe("the cluster's families", () => {
  it("gives IPv4 alone, IPv4 then IPv6 on a dual-stack leg, IPv6 alone", () => {
    expect(perFamily("10.0.0.1", "fd00::1", { families: "ipv4" })).toEqual(["10.0.0.1"]);
    expect(perFamily("10.0.0.1", "fd00::1", { families: "dual" })).toEqual(["10.0.0.1", "fd00::1"]);
    expect(perFamily("10.0.0.1", "fd00::1", { families: "ipv6" })).toEqual(["fd00::1"]);
  });

  it("has IPv6 on the dual-stack and IPv6 legs only among today's legs", () => {
    const withIpv6 = Object.entries(legs)
      .filter(([, leg]) => hasIpv6(leg))
      .map(([name]) => name);
    expect(withIpv6).toEqual(["dual-stack", "ipv6"]);
  });

  it("writes an IPv6 host in brackets beside its port, an IPv4 one bare", () => {
    expect(hostPort("fd00:252::5", 8080)).toBe("[fd00:252::5]:8080");
    expect(hostPort("10.252.0.5", 8080)).toBe("10.252.0.5:8080");
  });
});
