import { describe, expect, it } from "vitest";
import { chunkPorts, planLines, planRules } from "../../../src/redirect/plan.js";
import { testSpec as spec } from "../../kit/fixtures.js";

const range = (from: number, to = from) => ({ from, to });

describe("rule planning", () => {
  it("plans Linkerd's chains, order and comments", () => {
    const plan = planRules({ ...spec, proxyGid: 2103, subnetsToIgnore: ["10.0.0.0/8"] }, "ipv4");
    expect(plan.chains.PROXY_INIT_REDIRECT!.map((rule) => rule.join(" "))).toEqual([
      "-p tcp -m multiport --dports 4190,4191 -m comment --comment proxy-init/ignore-port-4190,4191 -j RETURN",
      "-s 10.0.0.0/8 -m comment --comment proxy-init/ignore-subnet-10.0.0.0/8 -j RETURN",
      "-p tcp -m comment --comment proxy-init/redirect-all-incoming-to-proxy-port -j REDIRECT --to-ports 4143",
    ]);
    expect(plan.chains.PROXY_INIT_OUTPUT!.map((rule) => rule.join(" "))).toEqual([
      "-m owner --uid-owner 2102 -m comment --comment proxy-init/ignore-proxy-user-id -j RETURN",
      "-m owner --gid-owner 2103 -m comment --comment proxy-init/ignore-proxy-group-id -j RETURN",
      "-o lo -m comment --comment proxy-init/ignore-loopback -j RETURN",
      "-p tcp -m comment --comment proxy-init/redirect-all-outgoing-to-proxy-port -j REDIRECT --to-ports 4140",
    ]);
    expect(plan.jumps.map((jump) => `${jump.from} ${jump.args.join(" ")}`)).toEqual([
      "PREROUTING -m comment --comment proxy-init/install-proxy-init-prerouting -j PROXY_INIT_REDIRECT",
      "OUTPUT -m comment --comment proxy-init/install-proxy-init-output -j PROXY_INIT_OUTPUT",
    ]);
  });

  it("writes no owner rule for UID or GID 0, as linkerd-cni: a rule for root would let every root process bypass the proxy", () => {
    const output = planRules({ ...spec, proxyUid: 0, proxyGid: 0 }, "ipv4").chains.PROXY_INIT_OUTPUT!.map((rule) => rule.join(" "));
    expect(output.some((rule) => rule.includes("-owner"))).toBe(false);
    expect(output[0]).toBe("-o lo -m comment --comment proxy-init/ignore-loopback -j RETURN");
  });

  it("matches a subnet with host bits by its network, and comments it as given", () => {
    const rules = planRules({ ...spec, subnetsToIgnore: ["1.1.1.1/24", "fd00::5/64"] }, "ipv6").chains.PROXY_INIT_REDIRECT!;
    expect(rules.map((rule) => rule.join(" "))).toContain(
      "-s fd00::/64 -m comment --comment proxy-init/ignore-subnet-fd00::5/64 -j RETURN",
    );
    const ipv4 = planRules({ ...spec, subnetsToIgnore: ["1.1.1.1/24"] }, "ipv4").chains.PROXY_INIT_REDIRECT!;
    expect(ipv4.map((rule) => rule.join(" "))).toContain(
      "-s 1.1.1.0/24 -m comment --comment proxy-init/ignore-subnet-1.1.1.1/24 -j RETURN",
    );
    // A /0 matches every source: iptables-save prints no -s for it, so the plan writes none.
    const any = planRules({ ...spec, subnetsToIgnore: ["0.0.0.0/0"] }, "ipv4").chains.PROXY_INIT_REDIRECT!;
    expect(any.map((rule) => rule.join(" "))).toContain("-m comment --comment proxy-init/ignore-subnet-0.0.0.0/0 -j RETURN");
  });

  it("redirects only the listed ports when ports-to-redirect is set", () => {
    const rules = planRules({ ...spec, portsToRedirect: [8080, 9090, 8080] }, "ipv4").chains.PROXY_INIT_REDIRECT!;
    // As linkerd-cni: one rule per listed port, repeats kept, commented "-to-proxy-port".
    expect(rules.slice(1).map((rule) => rule.join(" "))).toEqual([
      "-p tcp -m tcp --dport 8080 -m comment --comment proxy-init/redirect-port-8080-to-proxy-port -j REDIRECT --to-ports 4143",
      "-p tcp -m tcp --dport 9090 -m comment --comment proxy-init/redirect-port-9090-to-proxy-port -j REDIRECT --to-ports 4143",
      "-p tcp -m tcp --dport 8080 -m comment --comment proxy-init/redirect-port-8080-to-proxy-port -j REDIRECT --to-ports 4143",
    ]);
  });

  it("puts at most 15 ports in a multiport match, a range counting two, in order with repeats (as linkerd-cni)", () => {
    const sixteen = Array.from({ length: 16 }, (_, i) => range(1000 + i));
    expect(chunkPorts(sixteen)).toEqual([
      sixteen
        .slice(0, 15)
        .map((p) => p.from)
        .join(","),
      "1015",
    ]);
    const ranges = [...Array.from({ length: 7 }, (_, i) => range(2000 + i * 10, 2005 + i * 10)), range(3000), range(3001)];
    expect(chunkPorts(ranges)).toEqual(["2000:2005,2010:2015,2020:2025,2030:2035,2040:2045,2050:2055,2060:2065,3000", "3001"]);
    expect(chunkPorts([range(80), range(80), range(443)])).toEqual(["80,80,443"]);
    expect(chunkPorts([])).toEqual([]);
  });

  it("gives each family only its own skip-subnets", () => {
    const both = { ...spec, subnetsToIgnore: ["10.0.0.0/8", "fd00::/8"] };
    const subnetsOf = (family: "ipv4" | "ipv6") =>
      planRules(both, family)
        .chains.PROXY_INIT_REDIRECT!.filter((rule) => rule[0] === "-s")
        .map((rule) => rule[1]);
    expect(subnetsOf("ipv4")).toEqual(["10.0.0.0/8"]);
    expect(subnetsOf("ipv6")).toEqual(["fd00::/8"]);
  });

  it("shows a plan as rule lines: the jumps, then each chain's rules (meshcni rules)", () => {
    expect(planLines(planRules({ ...spec, inboundPortsToIgnore: [] }, "ipv4"))).toEqual([
      "-A PREROUTING -m comment --comment proxy-init/install-proxy-init-prerouting -j PROXY_INIT_REDIRECT",
      "-A OUTPUT -m comment --comment proxy-init/install-proxy-init-output -j PROXY_INIT_OUTPUT",
      "-A PROXY_INIT_REDIRECT -p tcp -m comment --comment proxy-init/redirect-all-incoming-to-proxy-port -j REDIRECT --to-ports 4143",
      "-A PROXY_INIT_OUTPUT -m owner --uid-owner 2102 -m comment --comment proxy-init/ignore-proxy-user-id -j RETURN",
      "-A PROXY_INIT_OUTPUT -o lo -m comment --comment proxy-init/ignore-loopback -j RETURN",
      "-A PROXY_INIT_OUTPUT -p tcp -m comment --comment proxy-init/redirect-all-outgoing-to-proxy-port -j REDIRECT --to-ports 4140",
    ]);
  });
});
