import { describe, expect, it } from "vitest";
import { parseNatTable, tokenize } from "../../../src/iptables/save.js";
import { hasOwnRules } from "../../../src/redirect/table.js";
import { savedTable as saved } from "../../kit/fixtures.js";

describe("iptables-save parsing", () => {
  it("tokenizes like iptables-restore: quotes group, backslashes escape", () => {
    expect(tokenize('-m comment --comment "a b \\"c\\"" -j RETURN')).toEqual(["-m", "comment", "--comment", 'a b "c"', "-j", "RETURN"]);
    expect(tokenize('--comment ""')).toEqual(["--comment", ""]);
  });

  it("reads only the nat table, keeping each chain's rule order", () => {
    const table = parseNatTable(saved());
    expect([...table.chains]).toEqual(["PREROUTING", "OUTPUT", "PROXY_INIT_REDIRECT", "PROXY_INIT_OUTPUT"]);
    expect(table.rules.some((rule) => rule.args.includes("MARK"))).toBe(false);
    expect(table.rules[0]).toMatchObject({
      chain: "PREROUTING",
      text: '-m comment --comment "proxy-init/install-proxy-init-prerouting" -j PROXY_INIT_REDIRECT',
    });
    expect(hasOwnRules(table)).toBe(true);
    expect(hasOwnRules(parseNatTable("*nat\n:PREROUTING ACCEPT [0:0]\nCOMMIT\n"))).toBe(false);
  });
});
