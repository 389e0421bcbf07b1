import { describe, expect, it } from "vitest";
import { parseNatTable } from "../../../src/iptables/save.js";
import { planLines, planRules } from "../../../src/redirect/plan.js";
import { emptyTable, hasOwnRules, jumpsIntoOwnChains, ownLines, rulesOf } from "../../../src/redirect/table.js";
import { savedTable as saved, testSpec as spec } from "../../kit/fixtures.js";

const plan = planRules(spec, "ipv4");
/** A nat table holding `lines` (`-A CHAIN args` or `:CHAIN`) and nothing else. */
const tableOf = (...lines: string[]) =>
  parseNatTable(["*nat", ":PREROUTING ACCEPT [0:0]", ":OUTPUT ACCEPT [0:0]", ":INPUT ACCEPT [0:0]", ...lines, "COMMIT"].join("\n"));

describe("what a nat table holds of the redirect", () => {
  it("reads the redirect back in planLines' order, whatever order the table lists it in, and nobody else's rules", () => {
    const text = saved(plan, ["-A OUTPUT -p udp -j RETURN", "-A PREROUTING -j KUBE-SERVICES", ":KUBE-SERVICES - [0:0]"]);
    const shuffled = text.replace(/^(-A PROXY_INIT_REDIRECT .*)\n((?:-A PROXY_INIT_OUTPUT .*\n)+)/m, "$2$1\n");
    expect(shuffled).not.toBe(text);
    expect(ownLines(parseNatTable(shuffled))).toEqual(planLines(plan));
  });

  it("finds a trace of the redirect in either of its chains, even empty, or in a jump or goto into one", () => {
    expect(hasOwnRules(parseNatTable(saved()))).toBe(true);
    expect(hasOwnRules(tableOf(":PROXY_INIT_OUTPUT - [0:0]"))).toBe(true);
    expect(hasOwnRules(tableOf(":PROXY_INIT_REDIRECT - [0:0]"))).toBe(true);
    expect(hasOwnRules(tableOf("-A INPUT -g PROXY_INIT_REDIRECT"))).toBe(true);
    expect(
      jumpsIntoOwnChains(tableOf("-A INPUT -g PROXY_INIT_REDIRECT", "-A OUTPUT -j PROXY_INIT_OUTPUT")).map((rule) => rule.text),
    ).toEqual(["-g PROXY_INIT_REDIRECT", "-j PROXY_INIT_OUTPUT"]);
  });

  it("finds none in a table without them: another's chains and jumps, a -j REDIRECT, an empty table", () => {
    expect(
      hasOwnRules(tableOf(":KUBE-SERVICES - [0:0]", "-A OUTPUT -j KUBE-SERVICES", "-A OUTPUT -p tcp -j REDIRECT --to-ports 15001")),
    ).toBe(false);
    expect(hasOwnRules(emptyTable(true))).toBe(false);
    expect(emptyTable(false)).toEqual({ chains: new Set(), rules: [], ownTable: false, natBefore: [] });
    expect(ownLines(emptyTable(true))).toEqual([]);
  });

  it("lists a chain's rules in table order", () => {
    const table = tableOf("-A OUTPUT -p udp -j RETURN", "-A INPUT -j ACCEPT", "-A OUTPUT -o lo -j RETURN");
    expect(rulesOf(table, "OUTPUT").map((rule) => rule.text)).toEqual(["-p udp -j RETURN", "-o lo -j RETURN"]);
  });
});
