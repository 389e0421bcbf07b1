import { describe, expect, it } from "vitest";
import { attrMap, type NetlinkMessage, readStrz } from "../../../src/nftables/netlink.js";
import { type Dumps, decodeTable } from "../../../src/nftables/ruleset.js";
import { canonicalPlan, natTableOf } from "../../../src/nftables/to-plan.js";
import { diffTable } from "../../../src/redirect/diff.js";
import { planLines, planRules } from "../../../src/redirect/plan.js";
import type { FirewallSpec } from "../../../src/redirect/spec.js";
import { ownLines } from "../../../src/redirect/table.js";
import recorded from "./golden.json" with { type: "json" };

/** The kernel's answers to `nft list table` (golden.json), sorted as meshcni's dumps would return them. */
function dumpsOf(name: keyof typeof recorded.dumps): Dumps {
  const messages: NetlinkMessage[] = recorded.dumps[name].map(({ type, flags, body }) => ({
    type,
    flags,
    seq: 0,
    payload: Uint8Array.from(Buffer.from(body, "hex")),
  }));
  const ofType = (message: number) => messages.filter((reply) => reply.type === ((10 << 8) | message));
  const elements = new Map<string, NetlinkMessage[]>();
  for (const reply of ofType(12)) {
    const set = readStrz(attrMap(reply.payload.subarray(4)).get(2)) ?? "";
    elements.set(set, [...(elements.get(set) ?? []), reply]);
  }
  return { tables: ofType(0), chains: ofType(3), sets: ofType(9), rules: ofType(6), elements };
}

const spec: FirewallSpec = {
  inboundProxyPort: 4143,
  outboundProxyPort: 4140,
  proxyUid: 2102,
  proxyGid: 2103,
  portsToRedirect: [],
  inboundPortsToIgnore: [
    { from: 4191, to: 4191 },
    { from: 4190, to: 4190 },
  ],
  outboundPortsToIgnore: [
    { from: 9091, to: 9091 },
    { from: 9200, to: 9210 },
  ],
  subnetsToIgnore: ["10.16.0.0/12", "192.168.0.0/16"],
};

describe(`reading back what the kernel (${recorded.kernel}) dumps`, () => {
  it("decodes a table nft wrote as meshcni would into exactly meshcni's plan: every kind of rule, sets with ranges, base chains", () => {
    const table = natTableOf(decodeTable("ipv4", "meshcni", dumpsOf("ipv4")));
    const plan = canonicalPlan(planRules(spec, "ipv4"));
    expect(ownLines(table)).toEqual(planLines(plan));
    expect(diffTable(plan, table)).toEqual([]);
  });

  it("reads an interval up to 65535 (the kernel holds its start, open, and no end) as the range it is", () => {
    const table = natTableOf(decodeTable("ipv4", "meshcni", dumpsOf("openRanges")));
    const open = {
      ...spec,
      inboundPortsToIgnore: [
        { from: 4190, to: 4190 },
        { from: 30000, to: 65535 },
      ],
      outboundPortsToIgnore: [
        { from: 1, to: 4 },
        { from: 65535, to: 65535 },
      ],
      subnetsToIgnore: [],
    };
    const plan = canonicalPlan(planRules(open, "ipv4"));
    expect(ownLines(table)).toEqual(planLines(plan));
    expect(diffTable(plan, table)).toEqual([]);
  });

  it("takes a nat chain at another priority for no PREROUTING: the jump from it is no jump to the diff", () => {
    const table = natTableOf(decodeTable("ipv6", "meshcni", dumpsOf("ipv6")));
    expect(table.rules.map((rule) => `${rule.chain}: ${rule.text}`)).toEqual([
      "PROXY_INIT_REDIRECT: -s fd00::/12 -m comment --comment proxy-init/ignore-subnet-fd00::/12 -j RETURN",
      "PROXY_INIT_REDIRECT: -p tcp -m tcp --dport 8080 -m comment --comment proxy-init/redirect-port-8080 -j REDIRECT --to-ports 4143",
      "nft:PREROUTING: -m comment --comment proxy-init/install-proxy-init-prerouting -j PROXY_INIT_REDIRECT",
    ]);
    const plan = canonicalPlan(
      planRules({ ...spec, portsToRedirect: [8080], inboundPortsToIgnore: [], subnetsToIgnore: ["fd00::/12"] }, "ipv6"),
    );
    expect(diffTable(plan, table)).toEqual(
      expect.arrayContaining([
        "chain PROXY_INIT_OUTPUT is missing",
        "missing jump from PREROUTING to PROXY_INIT_REDIRECT",
        "nft:PREROUTING: unexpected jump: -m comment --comment proxy-init/install-proxy-init-prerouting -j PROXY_INIT_REDIRECT",
      ]),
    );
  });

  it("finds no table where there is none", () => {
    expect(decodeTable("ipv4", "other", dumpsOf("ipv4"))).toBeUndefined();
    expect(natTableOf(undefined)).toEqual({ chains: new Set(), rules: [], ownTable: true, natBefore: [] });
  });
});
