import { describe, expect, it } from "vitest";
import { planTable } from "../../../src/nftables/from-plan.js";
import { attrMap, type NetlinkMessage, parseMessages, readStrz } from "../../../src/nftables/netlink.js";
import { type Dumps, decodeTable, portRanges, tableContents, tableName } from "../../../src/nftables/ruleset.js";
import { newTable } from "../../../src/nftables/table.js";
import { canonicalPlan, natTableOf, ruleArgs } from "../../../src/nftables/to-plan.js";
import { diffTable } from "../../../src/redirect/diff.js";
import { planLines, planRules } from "../../../src/redirect/plan.js";
import type { Family, FirewallSpec } from "../../../src/redirect/spec.js";
import { ownLines } from "../../../src/redirect/table.js";

const spec: FirewallSpec = {
  inboundProxyPort: 4143,
  outboundProxyPort: 4140,
  proxyUid: 2102,
  proxyGid: 2103,
  portsToRedirect: [8080, 9090],
  inboundPortsToIgnore: [
    { from: 4191, to: 4191 },
    { from: 4190, to: 4190 },
  ],
  outboundPortsToIgnore: [
    { from: 5432, to: 5432 },
    { from: 6000, to: 6010 },
    { from: 6011, to: 6011 },
  ],
  subnetsToIgnore: ["10.0.0.0/8", "172.16.0.0/12", "192.168.1.7/32", "fd00::/8", "2001:db8::/33", "0.0.0.0/0"],
};

/**
 * What the kernel would dump of a table meshcni wrote: the batch's own messages, sorted by
 * kind, each anonymous set named as the kernel names them (`__set%d` becomes `__set_1`,
 * `__set_2`…, in the order ids were given, which is the order of the sets and their lookups).
 */
function written(family: Family, of: FirewallSpec = spec): Dumps {
  let id = 0;
  const table = planTable(planRules(of, family), () => ++id);
  const template = new TextEncoder().encode("__set%d");
  const counters = new Map<number, number>();
  const messages: NetlinkMessage[] = [newTable(family, tableName, true), ...tableContents(table)].flatMap((part, index) =>
    parseMessages(part.make(index)).map((message) => {
      const payload = Uint8Array.from(message.payload);
      const at = payload.findIndex((_, i) => template.every((byte, j) => payload[i + j] === byte));
      if (at >= 0) {
        const kind = message.type & 0xff;
        const n = (counters.get(kind) ?? 0) + 1;
        counters.set(kind, n);
        payload.set(new TextEncoder().encode(`__set_${n}`), at);
      }
      return { ...message, payload };
    }),
  );
  const ofType = (message: number) => messages.filter((reply) => (reply.type & 0xff) === message);
  const elements = new Map(ofType(12).map((reply) => [readStrz(attrMap(reply.payload.subarray(4)).get(2)) ?? "", [reply]]));
  return { tables: ofType(0), chains: ofType(3), sets: ofType(9), rules: ofType(6), elements };
}

describe("meshcni's plan as nf_tables objects and back", () => {
  it.each(["ipv4", "ipv6"] as const)("%s: what meshcni writes reads back as exactly its plan", (family) => {
    const table = natTableOf(decodeTable(family, tableName, written(family)));
    const plan = canonicalPlan(planRules(spec, family));
    expect(ownLines(table)).toEqual(planLines(plan));
    expect(diffTable(plan, table)).toEqual([]);
  });

  // Every edge of the port space, in a hash set (single ports) and in an interval set.
  it.each(["0,65535", "1,65534", "0:1,4190", "65534:65535", "65535,1:4", "30000:65535,4190", "1:65535", "0:65535"])(
    "ports %s are written and read back as the same ranges",
    (list) => {
      const ranges = list.split(",").map((item) => {
        const [from, to] = item.split(":").map(Number);
        return { from: from!, to: to ?? from! };
      });
      const edges = { ...spec, inboundPortsToIgnore: ranges, outboundPortsToIgnore: ranges };
      const table = natTableOf(decodeTable("ipv4", tableName, written("ipv4", edges)));
      const plan = canonicalPlan(planRules(edges, "ipv4"));
      expect(ownLines(table)).toEqual(planLines(plan));
      expect(diffTable(plan, table)).toEqual([]);
    },
  );

  it("merges and sorts port lists, as a set holds them", () => {
    expect(portRanges("4191,4190")).toEqual([[4190, 4191]]);
    expect(portRanges("6011,6000:6010,5432,5432")).toEqual([
      [5432, 5432],
      [6000, 6011],
    ]);
    const plan = canonicalPlan(planRules(spec, "ipv4"));
    expect(planLines(plan)).toContain(
      "-A PROXY_INIT_OUTPUT -p tcp -m multiport --dports 5432,6000:6011 -m comment --comment proxy-init/ignore-port-5432,6000:6010,6011 -j RETURN",
    );
  });

  it("shows what it cannot translate as nft: tokens, which the diff then reports", () => {
    const args = ruleArgs(
      {
        chain: "PROXY_INIT_OUTPUT",
        exprs: [
          { kind: "other", name: "counter" },
          { kind: "meta", key: 3, dreg: 1 },
          { kind: "cmp", sreg: 1, op: 0, data: new Uint8Array(4) },
          { kind: "verdict", code: -5, chain: undefined },
          { kind: "other", name: "log" },
        ],
        comment: undefined,
      },
      "ipv4",
      [],
    );
    expect(args).toEqual(["nft:counter", "nft:meta-3", "nft:log", "-j", "RETURN"]);
  });
});
