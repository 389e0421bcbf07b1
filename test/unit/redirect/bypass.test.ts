import { describe, expect, it } from "vitest";
import { parseNatTable } from "../../../src/iptables/save.js";
import { bypasses } from "../../../src/redirect/bypass.js";
import { diffTable } from "../../../src/redirect/diff.js";
import { planRules } from "../../../src/redirect/plan.js";
import { savedTable as saved, testSpec as spec } from "../../kit/fixtures.js";

const plan = planRules(spec, "ipv4");
/** iptables-save's table with `rule` placed before meshcni's jump in its chain. */
const withRuleBefore = (rule: string) => {
  const chain = rule.split(" ")[1]!;
  return parseNatTable(saved().replace(new RegExp(`^(-A ${chain} .*-j PROXY_INIT_\\w+)$`, "m"), `${rule}\n$1`));
};

describe("what lets traffic bypass the redirect", () => {
  it.each([
    ["-A OUTPUT -p tcp -m tcp --dport 5555 -j RETURN", "OUTPUT: a rule before the jump to PROXY_INIT_OUTPUT"],
    ["-A PREROUTING -p tcp -m tcp --dport 5555 -j ACCEPT", "PREROUTING: a rule before the jump to PROXY_INIT_REDIRECT"],
    ["-A PREROUTING -p tcp -j DNAT --to-destination 10.0.0.1:80", "PREROUTING: a rule before the jump to PROXY_INIT_REDIRECT"],
    ["-A OUTPUT -p tcp -j REDIRECT --to-ports 5555", "OUTPUT: a rule before the jump to PROXY_INIT_OUTPUT"],
    ["-A OUTPUT -j ELSEWHERE", "OUTPUT: a rule before the jump to PROXY_INIT_OUTPUT"],
    ["-A OUTPUT -g ELSEWHERE", "OUTPUT: a rule before the jump to PROXY_INIT_OUTPUT"],
  ])("names a rule before the jump that can end or divert traversal: %s", (rule, where) => {
    const table = withRuleBefore(rule);
    expect(diffTable(plan, table)).toEqual([]);
    expect(bypasses(plan, table)).toEqual([`${where} lets traffic bypass the proxy: ${rule.split(" ").slice(2).join(" ")}`]);
  });

  it("lets pass what cannot bypass: a LOG, MARK, AUDIT, TRACE or DROP before the jump, a rule without a target, anything after the jump", () => {
    const passing = [
      "-j LOG",
      "-j NFLOG",
      "-j MARK --set-mark 1",
      "-j CONNMARK --save-mark",
      "-j AUDIT --type accept",
      "-j TRACE",
      "-j DROP",
    ];
    for (const rule of [...passing.map((target) => `-A OUTPUT ${target}`), "-A PREROUTING -p tcp"])
      expect(bypasses(plan, withRuleBefore(rule))).toEqual([]);
    expect(bypasses(plan, parseNatTable(saved(plan, ["-A OUTPUT -p tcp -j RETURN", "-A PREROUTING -j ACCEPT"])))).toEqual([]);
  });

  it("says nothing of rules before a jump that is missing (the diff says the jump is missing)", () => {
    const table = parseNatTable(saved().replace(/^-A OUTPUT .*$/m, "-A OUTPUT -j RETURN"));
    expect(bypasses(plan, table)).toEqual([]);
  });

  it("in a table of meshcni's own: other NAT that runs first is named; other rules in its base chains are differences", () => {
    const own = {
      ...parseNatTable(saved()),
      ownTable: true,
      natBefore: ["table ip x, nat at output priority -150, chain out: -j REDIRECT"],
    };
    expect(bypasses(plan, own)).toEqual([
      "NAT that runs before the redirect lets traffic bypass the proxy: table ip x, nat at output priority -150, chain out: -j REDIRECT",
    ]);
    const stranger = { ...parseNatTable(saved(plan, ["-A OUTPUT -p tcp -j RETURN", ":EXTRA - [0:0]"])), ownTable: true };
    expect(diffTable(plan, stranger)).toEqual(["chain EXTRA is not meshcni's", "OUTPUT: unexpected rule: -p tcp -j RETURN"]);
    expect(bypasses(plan, stranger)).toEqual([]);
  });
});
