import { beforeEach, describe, expect, it } from "vitest";
import type { PodAudit } from "../../../src/audit/classify.js";
import { moveAttachment, moveRules, moveTarget, recordsByBackend } from "../../../src/audit/move.js";
import { sweep } from "../../../src/audit/sweep.js";
import { planRules, type RulePlan } from "../../../src/redirect/plan.js";
import type { Backend, Redirector } from "../../../src/redirect/redirector.js";
import { emptyTable, type NatTable } from "../../../src/redirect/table.js";
import type { AttachmentRecord } from "../../../src/state/records.js";
import { fakeSweepIo, stateDir } from "../../kit/audit/fake-sweep.js";
import { sweepOptions as options, sweepScene } from "../../kit/audit/sweep-scene.js";
import { FakeNode } from "../../kit/plugin/fake-node.js";

const spec = {
  inboundProxyPort: 4143,
  outboundProxyPort: 4140,
  proxyUid: 2102,
  portsToRedirect: [],
  inboundPortsToIgnore: [],
  outboundPortsToIgnore: [],
  subnetsToIgnore: [],
};
const plan = planRules(spec, "ipv4");
const record = (backend: Backend, state: AttachmentRecord["state"] = "added"): AttachmentRecord => ({
  version: 1,
  state,
  pod: { namespace: "shop", name: "cart", uid: "uid-cart" },
  containerId: "c-cart",
  ifname: "eth0",
  netns: "/var/run/netns/cni-cart",
  backend,
  plans: [plan],
  time: new Date().toISOString(),
});
const audit = (status: PodAudit["status"]): PodAudit => ({ namespace: "shop", name: "cart", uid: "uid-cart", status, details: [] });

describe("which backend a pod's redirect moves to", () => {
  it("a protected pod recorded in another backend than the node's moves to the node's, either way", () => {
    expect(moveTarget(audit("protected"), record("legacy"), "nftables")).toEqual({ to: "nftables" });
    expect(moveTarget(audit("protected"), record("nftables"), "nft")).toEqual({ to: "nft" });
    expect(moveTarget(audit("protected"), record("nft"), "legacy")).toEqual({ to: "legacy" });
    expect(moveTarget(audit("protected"), record("plain"), "nftables")).toEqual({ to: "nftables" });
  });

  it("nothing moves in the node's backend, without a finished record, or that is not protected (a repair's, in the backend holding it)", () => {
    expect(moveTarget(audit("protected"), record("nft"), "nft")).toBeUndefined();
    expect(moveTarget(audit("protected"), undefined, "nftables")).toBeUndefined();
    expect(moveTarget(audit("protected"), record("nft", "adding"), "nftables")).toBeUndefined();
    for (const status of ["adopted", "missing", "drifted", "unknown"] as const)
      expect(moveTarget(audit(status), record("nft"), "nftables")).toBeUndefined();
  });

  it("plain and an iptables backend may be the same tables: the redirect stays, saying why", () => {
    for (const [from, to] of [
      ["plain", "nft"],
      ["legacy", "plain"],
    ] as const)
      expect(moveTarget(audit("protected"), record(from), to)).toEqual({ stays: expect.stringContaining("may be the same tables") });
  });
});

/** Two backends' tables in one netns, each redirector reading and writing its own; every call in `calls`. */
function twoBackends(writeFaithfully = true) {
  const held = new Map<Backend, RulePlan[]>();
  const calls: string[] = [];
  const redirector = (backend: Backend): Redirector => ({
    backend,
    async apply(plans) {
      calls.push(`${backend} apply`);
      held.set(backend, writeFaithfully ? plans : []);
      return plans.map((each) => each.family);
    },
    async read(): Promise<NatTable> {
      calls.push(`${backend} read`);
      // A shared nat table holding the plans: their chains and rules, and the jumps into them.
      const table = emptyTable(false);
      const rule = (chain: string, args: string[]) => ({ chain, args, text: args.join(" ") });
      for (const each of held.get(backend) ?? []) {
        for (const [chain, rules] of Object.entries(each.chains)) {
          table.chains.add(chain);
          table.rules.push(...rules.map((args) => rule(chain, args)));
        }
        table.rules.push(...each.jumps.map((jump) => rule(jump.from, jump.args)));
      }
      return table;
    },
    expected: (each) => each,
    async remove(families) {
      calls.push(`${backend} remove`);
      held.delete(backend);
      return families;
    },
    close: () => undefined,
  });
  return { held, calls, redirector };
}

describe("the records by backend after a sweep's moves", () => {
  it("counts finished records where their redirect is once the moves that were done are, not the failed ones", () => {
    const records = [record("nft"), record("nft"), record("nft", "adding"), record("legacy")];
    const moves = [{ from: "nft", to: "nftables" }, { from: "nft", to: "nftables", failed: "EPERM" }, undefined] as const;
    expect(recordsByBackend(records, [...moves])).toEqual({ nft: 1, nftables: 1, legacy: 1 });
    expect(recordsByBackend([], [])).toEqual({});
  });
});

describe("moving the rules", () => {
  it("writes the new backend's and reads them back before it removes the old backend's", async () => {
    const netns = twoBackends();
    netns.held.set("legacy", [plan]);
    await moveRules([plan], netns.redirector("nftables"), netns.redirector("legacy"));
    expect(netns.calls).toEqual(["nftables apply", "nftables read", "legacy remove"]);
    expect([...netns.held.keys()]).toEqual(["nftables"]);
  });

  it("leaves the old backend's rules when the new do not read back as planned", async () => {
    const netns = twoBackends(false);
    netns.held.set("legacy", [plan]);
    await expect(moveRules([plan], netns.redirector("nftables"), netns.redirector("legacy"))).rejects.toThrow(
      /the nftables backend does not hold the plan after writing it: ipv4: /,
    );
    expect(netns.calls).not.toContain("legacy remove");
    expect(netns.held.get("legacy")).toEqual([plan]);
  });
});

describe("moving an attachment", () => {
  let node: FakeNode;
  beforeEach(() => {
    node = new FakeNode();
  });
  const store = () => node.recordStore(stateDir);
  const write = (backend: Backend) => {
    const { version: _v, time: _t, ...kept } = record(backend);
    store().write(kept);
    return store().read({ containerID: "c-cart", ifname: "eth0" })!;
  };

  it("moves under the attachment's lock and records the new backend", async () => {
    const seen = write("legacy");
    const moves: string[] = [];
    const moved = await moveAttachment(store(), seen, "nftables", async (netns, from, to) => void moves.push(`${netns} ${from}->${to}`));
    expect(moved).toEqual({ from: "legacy", to: "nftables" });
    expect(moves).toEqual(["/var/run/netns/cni-cart legacy->nftables"]);
    expect(store().read({ containerID: "c-cart", ifname: "eth0" })).toMatchObject({ backend: "nftables", plans: [plan], state: "added" });
  });

  it("a record changed since the sweep read it (a DEL, a new ADD) is left as it is now", async () => {
    const seen = write("legacy");
    write("nft");
    const moves: string[] = [];
    const move = async (netns: string) => void moves.push(netns);
    expect(await moveAttachment(store(), seen, "nftables", move)).toBeUndefined();
    store().remove({ containerID: "c-cart", ifname: "eth0" });
    expect(await moveAttachment(store(), seen, "nftables", move)).toBeUndefined();
    expect(moves).toEqual([]);
  });

  it("a failed move keeps the record's backend and says what failed", async () => {
    const seen = write("legacy");
    const moved = await moveAttachment(store(), seen, "nftables", async () => {
      throw new Error("nf_tables: EPERM");
    });
    expect(moved).toEqual({ from: "legacy", to: "nftables", failed: "nf_tables: EPERM" });
    expect(store().read({ containerID: "c-cart", ifname: "eth0" })).toMatchObject({ backend: "legacy" });
  });
});

describe("a sweep on a node whose backend changed", () => {
  let node: FakeNode;
  const { addedPod } = sweepScene(() => node);
  beforeEach(() => {
    node = new FakeNode();
  });

  it("moves every protected pod to the node's backend, once, with no Event; the pods stay protected", async () => {
    const { netns } = await addedPod("cart");
    await addedPod("checkout");
    const { io, writes, moves } = fakeSweepIo(node, { backend: "legacy" });
    const report = await sweep(options("redirect"), io);
    // Where the redirects are once the sweep is done: the node's backend, and the records by the backend holding them.
    expect(report.backends).toEqual({ node: "legacy", records: { legacy: 2 } });
    expect(report.pods.map((pod) => [pod.name, pod.status, pod.moved])).toEqual([
      ["cart", "protected", { from: "nft", to: "legacy" }],
      ["checkout", "protected", { from: "nft", to: "legacy" }],
    ]);
    expect(report.pods[0]!.details).toEqual([expect.stringContaining("moved from the nft backend to legacy")]);
    expect(moves[0]).toEqual({ netns, from: "nft", to: "legacy" });
    expect([...node.records.values()].map((each) => each.backend)).toEqual(["legacy", "legacy"]);
    expect(writes.events).toEqual([]);
    const again = await sweep(options("redirect"), io);
    expect(again.pods.map((pod) => [pod.status, pod.moved, pod.details])).toEqual([
      ["protected", undefined, []],
      ["protected", undefined, []],
    ]);
    expect(moves).toHaveLength(2);
  });

  it("an audit without a policy, --repair none, and an excluded namespace move nothing; the audit says where the redirect is", async () => {
    await addedPod("cart");
    const { io, moves } = fakeSweepIo(node, { backend: "legacy" });
    const audited = await sweep(options(undefined), io);
    expect(audited.backends).toEqual({ node: "legacy", records: { nft: 1 } });
    expect(audited.pods[0]!.details).toEqual([
      "its redirect is in the nft backend, the node's is legacy: a sweep that repairs moves it in place",
    ]);
    await sweep(options("none"), io);
    await sweep(options("redirect", { excludeNamespaces: ["shop"] }), io);
    expect(moves).toEqual([]);
    expect([...node.records.values()][0]!.backend).toBe("nft");
  });
});
