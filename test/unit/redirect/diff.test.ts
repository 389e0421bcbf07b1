import { describe, expect, it } from "vitest";
import { parseNatTable } from "../../../src/iptables/save.js";
import { diffTable } from "../../../src/redirect/diff.js";
import { planRules } from "../../../src/redirect/plan.js";
import { savedTable as saved, testSpec as spec } from "../../kit/fixtures.js";

describe("CHECK diffing", () => {
  const plan = planRules(spec, "ipv4");

  it("finds nothing when the table is as planned", () => {
    expect(diffTable(plan, parseNatTable(saved()))).toEqual([]);
  });

  it("lists missing and unexpected rules", () => {
    const text = saved()
      .replace(/^-A PROXY_INIT_OUTPUT -o lo .*$/m, "")
      .replace("COMMIT\n# Completed", "-A PROXY_INIT_OUTPUT -p udp -j RETURN\nCOMMIT\n# Completed");
    expect(diffTable(plan, parseNatTable(text))).toEqual([
      "PROXY_INIT_OUTPUT: missing rule: -o lo -m comment --comment proxy-init/ignore-loopback -j RETURN",
      "PROXY_INIT_OUTPUT: unexpected rule: -p udp -j RETURN",
    ]);
  });

  it("notices reordered and repeated rules", () => {
    const lines = saved().split("\n");
    const uid = lines.findIndex((line) => line.includes("ignore-proxy-user-id"));
    [lines[uid], lines[uid + 1]] = [lines[uid + 1]!, lines[uid]!];
    expect(diffTable(plan, parseNatTable(lines.join("\n")))).toEqual([
      expect.stringMatching(/^PROXY_INIT_OUTPUT: rules are reordered or repeated/),
    ]);
    const repeated = saved().replace(
      "COMMIT\n# Completed",
      `-A PROXY_INIT_OUTPUT ${lines[uid + 1]!.slice("-A PROXY_INIT_OUTPUT ".length)}\nCOMMIT\n# Completed`,
    );
    expect(diffTable(plan, parseNatTable(repeated))).toHaveLength(1);
  });

  it("notices a missing chain, a missing, altered or repeated jump, and a stray one", () => {
    expect(diffTable(plan, parseNatTable(saved().replace(/^:PROXY_INIT_OUTPUT.*$/m, "")))).toContain("chain PROXY_INIT_OUTPUT is missing");
    expect(diffTable(plan, parseNatTable(saved().replace(/^-A OUTPUT .*$/m, "")))).toEqual([
      "missing jump from OUTPUT to PROXY_INIT_OUTPUT",
    ]);
    const altered = saved().replace(/^-A OUTPUT .*$/m, "-A OUTPUT -p tcp -j PROXY_INIT_OUTPUT");
    expect(diffTable(plan, parseNatTable(altered))).toEqual(["OUTPUT: jump to PROXY_INIT_OUTPUT differs: -p tcp -j PROXY_INIT_OUTPUT"]);
    const twice = saved(plan, ['-A OUTPUT -m comment --comment "proxy-init/install-proxy-init-output" -j PROXY_INIT_OUTPUT']);
    expect(diffTable(plan, parseNatTable(twice))).toEqual(["OUTPUT: 2 jumps to PROXY_INIT_OUTPUT, expected 1"]);
    const stray = saved(plan, ["-A INPUT -j PROXY_INIT_REDIRECT"]);
    expect(diffTable(plan, parseNatTable(stray))).toEqual(["INPUT: unexpected jump: -j PROXY_INIT_REDIRECT"]);
  });

  it("takes a rule with one token changed, or one more or fewer, for another rule", () => {
    const rule =
      "-A PROXY_INIT_OUTPUT -p tcp -m comment --comment proxy-init/redirect-all-outgoing-to-proxy-port -j REDIRECT --to-ports 4140";
    const planned =
      "PROXY_INIT_OUTPUT: missing rule: -p tcp -m comment --comment proxy-init/redirect-all-outgoing-to-proxy-port -j REDIRECT --to-ports 4140";
    for (const found of [rule.replace("4140", "4141"), `${rule} --random`, rule.replace(" --to-ports 4140", "")]) {
      const table = parseNatTable(saved().replace(/^-A PROXY_INIT_OUTPUT -p tcp .*$/m, found));
      expect(diffTable(plan, table)).toEqual([
        planned,
        `PROXY_INIT_OUTPUT: unexpected rule: ${found.slice("-A PROXY_INIT_OUTPUT ".length)}`,
      ]);
    }
  });

  it("lists the rules it found when they are reordered", () => {
    const lines = saved().split("\n");
    const loopback = lines.findIndex((line) => line.includes("ignore-loopback"));
    [lines[loopback], lines[loopback + 1]] = [lines[loopback + 1]!, lines[loopback]!];
    expect(diffTable(plan, parseNatTable(lines.join("\n")))).toEqual([
      "PROXY_INIT_OUTPUT: rules are reordered or repeated: found [" +
        "-m owner --uid-owner 2102 -m comment --comment proxy-init/ignore-proxy-user-id -j RETURN | " +
        "-p tcp -m comment --comment proxy-init/redirect-all-outgoing-to-proxy-port -j REDIRECT --to-ports 4140 | " +
        "-o lo -m comment --comment proxy-init/ignore-loopback -j RETURN]",
    ]);
  });

  it("tells a jump into the wrong chain of ours, or a goto into one, from a second jump", () => {
    const crossed = saved(plan, ["-A OUTPUT -j PROXY_INIT_REDIRECT", "-A INPUT -g PROXY_INIT_OUTPUT"]);
    expect(diffTable(plan, parseNatTable(crossed))).toEqual([
      "OUTPUT: unexpected jump: -j PROXY_INIT_REDIRECT",
      "INPUT: unexpected jump: -g PROXY_INIT_OUTPUT",
    ]);
    const alteredToo = saved(plan, ["-A OUTPUT -p udp -j PROXY_INIT_OUTPUT"]);
    expect(diffTable(plan, parseNatTable(alteredToo))).toEqual(["OUTPUT: 2 jumps to PROXY_INIT_OUTPUT, expected 1"]);
  });
});
