import { describe, expect, it } from "vitest";
import { parseNatTable } from "../../../src/iptables/save.js";
import { planRules, type RulePlan } from "../../../src/redirect/plan.js";
import { inspectPlans, type Redirector } from "../../../src/redirect/redirector.js";
import type { Family } from "../../../src/redirect/spec.js";
import { emptyTable, type NatTable } from "../../../src/redirect/table.js";
import { savedTable as saved, testSpec as spec } from "../../kit/fixtures.js";

const plans = [planRules(spec, "ipv4"), planRules(spec, "ipv6")];

/** A redirector whose netns holds `tables`; `expected` is how it reads a plan back. */
function holding(tables: Partial<Record<Family, NatTable>>, expected: (plan: RulePlan) => RulePlan = (plan) => plan): Redirector {
  const unused = async (): Promise<never> => {
    throw new Error("inspecting only reads");
  };
  return {
    backend: "nft",
    read: async (family) => tables[family] ?? emptyTable(false),
    expected,
    apply: unused,
    remove: unused,
    close: () => undefined,
  };
}

describe("inspecting a pod's redirect", () => {
  it("finds nothing to say when every family holds its plan", async () => {
    const tables = { ipv4: parseNatTable(saved(plans[0])), ipv6: parseNatTable(saved(plans[1])) };
    expect(await inspectPlans(holding(tables), plans)).toEqual({ differences: [], hasRedirect: true });
  });

  it("leads each difference with its family, and has a redirect when any family holds some of it", async () => {
    const result = await inspectPlans(holding({ ipv4: parseNatTable(saved(plans[0])) }), plans);
    expect(result).toEqual({
      differences: [
        "ipv6: chain PROXY_INIT_REDIRECT is missing",
        "ipv6: chain PROXY_INIT_OUTPUT is missing",
        "ipv6: missing jump from PREROUTING to PROXY_INIT_REDIRECT",
        "ipv6: missing jump from OUTPUT to PROXY_INIT_OUTPUT",
      ],
      hasRedirect: true,
    });
    expect((await inspectPlans(holding({}), plans)).hasRedirect).toBe(false);
    expect(await inspectPlans(holding({}), [])).toEqual({ differences: [], hasRedirect: false });
  });

  it("compares with the plan as the backend reads it back, and names what bypasses it", async () => {
    const reordered = (plan: RulePlan): RulePlan => ({
      ...plan,
      chains: { ...plan.chains, PROXY_INIT_OUTPUT: [...plan.chains.PROXY_INIT_OUTPUT!].reverse() },
    });
    const asRead = saved(reordered(plans[0]!)).replace(/^(-A OUTPUT -m comment)/m, "-A OUTPUT -p tcp --dport 5555 -j ACCEPT\n$1");
    const redirector = holding({ ipv4: parseNatTable(asRead) }, reordered);
    expect((await inspectPlans(redirector, [plans[0]!])).differences).toEqual([
      "ipv4: OUTPUT: a rule before the jump to PROXY_INIT_OUTPUT lets traffic bypass the proxy: -p tcp --dport 5555 -j ACCEPT",
    ]);
  });
});
