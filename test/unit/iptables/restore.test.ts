import { describe, expect, it } from "vitest";
import { renderApply, renderRemove } from "../../../src/iptables/restore.js";
import { parseNatTable } from "../../../src/iptables/save.js";
import { planRules } from "../../../src/redirect/plan.js";
import { savedTable as saved, testSpec as spec } from "../../kit/fixtures.js";

describe("restore text", () => {
  const plan = planRules(spec, "ipv4");

  it("creates the chains, their rules and the jumps on an empty table, in one commit", () => {
    expect(renderApply(plan, parseNatTable(""))).toBe(
      [
        "*nat",
        ":PROXY_INIT_REDIRECT - [0:0]",
        ":PROXY_INIT_OUTPUT - [0:0]",
        "-A PROXY_INIT_REDIRECT -p tcp -m multiport --dports 4190,4191 -m comment --comment proxy-init/ignore-port-4190,4191 -j RETURN",
        "-A PROXY_INIT_REDIRECT -p tcp -m comment --comment proxy-init/redirect-all-incoming-to-proxy-port -j REDIRECT --to-ports 4143",
        "-A PROXY_INIT_OUTPUT -m owner --uid-owner 2102 -m comment --comment proxy-init/ignore-proxy-user-id -j RETURN",
        "-A PROXY_INIT_OUTPUT -o lo -m comment --comment proxy-init/ignore-loopback -j RETURN",
        "-A PROXY_INIT_OUTPUT -p tcp -m comment --comment proxy-init/redirect-all-outgoing-to-proxy-port -j REDIRECT --to-ports 4140",
        "-A PREROUTING -m comment --comment proxy-init/install-proxy-init-prerouting -j PROXY_INIT_REDIRECT",
        "-A OUTPUT -m comment --comment proxy-init/install-proxy-init-output -j PROXY_INIT_OUTPUT",
        "COMMIT",
        "",
      ].join("\n"),
    );
  });

  it("keeps one planned jump and deletes repeated and foreign jumps into our chains", () => {
    const table = parseNatTable(
      saved(plan, [
        '-A OUTPUT -m comment --comment "proxy-init/install-proxy-init-output" -j PROXY_INIT_OUTPUT',
        '-A PREROUTING -m comment --comment "proxy-init/install-proxy-init-prerouting/1700000000" -j PROXY_INIT_REDIRECT',
      ]),
    );
    const text = renderApply(plan, table);
    expect(text.split("\n").filter((line) => /^-[AD] (PREROUTING|OUTPUT) /.test(line))).toEqual([
      '-D OUTPUT -m comment --comment "proxy-init/install-proxy-init-output" -j PROXY_INIT_OUTPUT',
      '-D PREROUTING -m comment --comment "proxy-init/install-proxy-init-prerouting/1700000000" -j PROXY_INIT_REDIRECT',
    ]);
  });

  it("refuses to render a token that could break out of its rule", () => {
    const hostile = planRules(spec, "ipv4");
    hostile.chains.PROXY_INIT_REDIRECT!.push(["-s", "10.0.0.0/8\n-A OUTPUT -j ACCEPT", "-j", "RETURN"]);
    expect(() => renderApply(hostile, parseNatTable(""))).toThrow(/refusing to render/);
  });

  it("removes jumps first, then flushes and deletes our chains; nothing when nothing is there", () => {
    expect(renderRemove(parseNatTable(saved()))).toBe(
      [
        "*nat",
        '-D PREROUTING -m comment --comment "proxy-init/install-proxy-init-prerouting" -j PROXY_INIT_REDIRECT',
        '-D OUTPUT -m comment --comment "proxy-init/install-proxy-init-output" -j PROXY_INIT_OUTPUT',
        "-F PROXY_INIT_REDIRECT",
        "-X PROXY_INIT_REDIRECT",
        "-F PROXY_INIT_OUTPUT",
        "-X PROXY_INIT_OUTPUT",
        "COMMIT",
        "",
      ].join("\n"),
    );
    expect(renderRemove(parseNatTable("*nat\n:PREROUTING ACCEPT [0:0]\nCOMMIT\n"))).toBeUndefined();
  });

  it("removes another chain's goto into our chains too: a chain still reached cannot be deleted", () => {
    const text = renderRemove(parseNatTable(saved(undefined, ["-A SIDECAR -p tcp -g PROXY_INIT_OUTPUT", "-A SIDECAR -p udp -j RETURN"])));
    expect(text?.split("\n").filter((line) => line.includes("SIDECAR"))).toEqual(["-D SIDECAR -p tcp -g PROXY_INIT_OUTPUT"]);
  });
});
