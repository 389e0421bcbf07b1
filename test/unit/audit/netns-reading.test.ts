import { describe, expect, it } from "vitest";
import { type NetnsReader, plansDigest, readPodNetns, type SeenNetns, stillHolds } from "../../../src/audit/netns-reading.js";
import { planRules } from "../../../src/redirect/plan.js";
import type { Backend, Redirector } from "../../../src/redirect/redirector.js";
import { testSpec } from "../../kit/fixtures.js";

const plan = planRules(testSpec, "ipv4");
const target = (backend: Backend = "nft") => ({ uid: "u1", backend, plans: [plan] });

/** A netns as the reader sees it: its generation, what inspecting it finds, what goes around; each read counted. */
function netns(state: { generation?: number | undefined; differences?: string[]; around?: string[] }) {
  const reads = { inspect: 0, around: 0, generation: 0 };
  const reader: NetnsReader = {
    inspect: async () => {
      reads.inspect++;
      return { differences: state.differences ?? [], hasRedirect: true };
    },
    around: async () => {
      reads.around++;
      return state.around ?? [];
    },
    generation: async () => {
      reads.generation++;
      return state.generation;
    },
  };
  return { reader, reads };
}

const redirector = async () => ({}) as Redirector;

describe("a pod's netns read, or an earlier reading taken", () => {
  it("reads a netns it saw nothing of, and keeps the reading when clean", async () => {
    const { reader, reads } = netns({ generation: 5 });
    const reading = await readPodNetns(target(), "0:77", undefined, reader, redirector);
    expect(reads).toEqual({ inspect: 1, around: 1, generation: 1 });
    expect(reading).toEqual({
      differences: [],
      hasRedirect: true,
      around: [],
      seen: { netns: "0:77", generation: 5, plans: plansDigest(target()), hasRedirect: true },
    });
  });

  it("takes the earlier reading while netns, generation and plans are the same: no rule read", async () => {
    const { reader, reads } = netns({ generation: 5, differences: ["would be found"] });
    const earlier: SeenNetns = { netns: "0:77", generation: 5, plans: plansDigest(target()), hasRedirect: true };
    const reading = await readPodNetns(target(), "0:77", earlier, reader, redirector);
    expect(reads).toEqual({ inspect: 0, around: 0, generation: 1 });
    expect(reading).toEqual({ differences: [], hasRedirect: true, around: [], seen: earlier });
  });

  it("reads again when the generation moved, the netns is another, or the plans changed", async () => {
    const earlier: SeenNetns = { netns: "0:77", generation: 5, plans: plansDigest(target()), hasRedirect: true };
    for (const [identity, generation, backend] of [
      ["0:77", 6, "nft"],
      ["0:78", 5, "nft"],
      ["0:77", 5, "nftables"],
    ] as const) {
      const { reader, reads } = netns({ generation, differences: ["-A PROXY_INIT_OUTPUT missing"] });
      const reading = await readPodNetns(target(backend), identity, earlier, reader, redirector);
      expect(reads.inspect).toBe(1);
      expect(reading.differences).toEqual(["-A PROXY_INIT_OUTPUT missing"]);
      expect(reading.seen).toBeUndefined();
    }
  });

  it("keeps nothing without a generation (iptables-legacy rules there), for the legacy backend, or with anything around the redirect", async () => {
    const none = netns({ generation: undefined });
    expect((await readPodNetns(target(), "0:77", undefined, none.reader, redirector)).seen).toBeUndefined();
    const legacy = netns({ generation: 5 });
    expect((await readPodNetns(target("legacy"), "0:77", undefined, legacy.reader, redirector)).seen).toBeUndefined();
    expect(legacy.reads.generation).toBe(0);
    const bypassed = netns({ generation: 5, around: ["ipv4: untracked TCP never reaches the redirect"] });
    expect((await readPodNetns(target(), "0:77", undefined, bypassed.reader, redirector)).seen).toBeUndefined();
  });

  it("holds only for a generation read now", () => {
    const earlier: SeenNetns = { netns: "0:77", generation: 5, plans: "p", hasRedirect: true };
    expect(stillHolds(earlier, { netns: "0:77", generation: 5, plans: "p" })).toBe(true);
    expect(stillHolds(earlier, undefined)).toBe(false);
    expect(stillHolds(undefined, { netns: "0:77", generation: 5, plans: "p" })).toBe(false);
  });
});
