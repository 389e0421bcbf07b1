import { describe, expect, it } from "vitest";
import { fightThreshold } from "../../../src/installer/fight.js";
import { freshMemory, halfWrittenGraceMs, type NetDirMemory, type NetDirPlan, planNetDir } from "../../../src/installer/netdir.js";

const entry = { name: "meshcni", type: "meshcni" };
const conflist = (name: string, types: string[], extra: object = {}) => ({
  name,
  text: `${JSON.stringify({ cniVersion: "1.0.0", name, ...extra, plugins: types.map((type) => (type === "meshcni" ? entry : { type })) }, null, 2)}\n`,
});
const applied = (plan: NetDirPlan) => {
  if (plan.kind !== "apply") throw new Error(`expected a plan to apply, got ${JSON.stringify(plan)}`);
  return plan;
};

describe("planning the net dir", () => {
  it("puts our entry last in the lexicographically first valid config, and nothing when it is there", () => {
    const { plan, memory } = planNetDir(
      [conflist("20-b.conflist", ["bridge"]), conflist("10-calico.conflist", ["calico"])],
      entry,
      freshMemory,
      0,
    );
    const write = applied(plan).write!;
    expect(write).toMatchObject({ name: "10-calico.conflist", cause: "chain", duplicates: false });
    expect(JSON.parse(write.text).plugins).toEqual([{ type: "calico" }, entry]);
    const again = planNetDir([{ name: write.name, text: write.text }], entry, memory, 1);
    expect(applied(again.plan).write).toBeUndefined();
  });

  it("while the active chain cannot run, chains the configs after it up to the first that can (CRI-O's next), and takes them back once it can", () => {
    const installed = new Set(["bridge", "azure-vnet", "meshcni"]);
    const runnable = (config: { json: { plugins?: unknown } }) =>
      (config.json.plugins as Array<{ type: string }>).every((plugin) => installed.has(plugin.type));
    const files = [
      conflist("05-cilium.conflist", ["cilium-cni"]),
      { name: "07-notes.conflist", text: "{" },
      conflist("08-portmap.conflist", ["bridge", "portmap"]),
      conflist("10-azure.conflist", ["azure-vnet", "meshcni"]),
      conflist("20-bridge.conflist", ["bridge", "meshcni"]),
    ];
    const broken = applied(planNetDir(files, entry, freshMemory, 0, runnable).plan);
    expect(broken.write?.name).toBe("05-cilium.conflist");
    // 08 cannot run either; 10 already holds the entry; 20 comes after the first that can run.
    expect(broken.fallbacks.map((write) => [write.name, JSON.parse(write.text).plugins.at(-1)])).toEqual([["08-portmap.conflist", entry]]);
    expect(broken.removals.map((removal) => removal.name)).toEqual(["20-bridge.conflist"]);
    installed.add("cilium-cni");
    const whole = applied(planNetDir(files, entry, freshMemory, 0, runnable).plan);
    expect(whole.fallbacks).toEqual([]);
    expect(whole.removals.map((removal) => removal.name)).toEqual(["10-azure.conflist", "20-bridge.conflist"]);
  });

  it("takes its entry out of a config set aside (Cilium's *.cilium_bak), which a runtime never reads but an operator may put back", () => {
    const files = [
      conflist("05-cilium.conflist", ["cilium-cni", "meshcni"]),
      conflist("10-azure.conflist.cilium_bak", ["azure-vnet", "meshcni"]),
    ];
    const plan = applied(planNetDir(files, entry, freshMemory, 0).plan);
    expect(plan.active).toBe("05-cilium.conflist");
    expect(plan.removals.map((removal) => [removal.name, JSON.parse(removal.text).plugins])).toEqual([
      ["10-azure.conflist.cilium_bak", [{ type: "azure-vnet" }]],
    ]);
  });

  it("tells why it writes: a first chain, a config rewritten without the entry, another config sorting first", () => {
    const first = planNetDir([conflist("10-calico.conflist", ["calico"])], entry, freshMemory, 0);
    const rewritten = planNetDir([conflist("10-calico.conflist", ["calico"], { revision: 2 })], entry, first.memory, 1000);
    expect(applied(rewritten.plan).write).toMatchObject({ cause: "entry_removed" });
    const cilium = planNetDir(
      [conflist("05-cilium.conflist", ["cilium-cni"]), { name: "10-calico.conflist", text: applied(rewritten.plan).write!.text }],
      entry,
      rewritten.memory,
      2000,
    );
    expect(applied(cilium.plan).write).toMatchObject({ name: "05-cilium.conflist", cause: "active_config_changed" });
  });

  it("waits out a half-written file that sorts first, then says the runtime cannot load it, touching nothing", () => {
    const files = [{ name: "05-cilium.conflist", text: '{"cniVersion": "1.0' }, conflist("10-calico.conflist", ["calico", "meshcni"])];
    const first = planNetDir(files, entry, freshMemory, 1000);
    expect(first.plan).toEqual({ kind: "wait", file: "05-cilium.conflist", retryInMs: 25 });
    const stillWaiting = planNetDir(files, entry, first.memory, 1000 + halfWrittenGraceMs - 1);
    expect(stillWaiting.plan.kind).toBe("wait");
    expect(planNetDir(files, entry, stillWaiting.memory, 1000 + halfWrittenGraceMs).plan).toEqual({
      kind: "broken",
      file: "05-cilium.conflist",
      reason: expect.stringContaining("not valid JSON"),
    });
  });

  it("restarts the grace when a file became valid in between", () => {
    const half = { name: "05-cilium.conflist", text: "{" };
    const calico = conflist("10-calico.conflist", ["calico", "meshcni"]);
    const first = planNetDir([half, calico], entry, freshMemory, 0);
    const valid = planNetDir([conflist("05-cilium.conflist", ["cilium-cni"]), calico], entry, first.memory, 1000);
    expect(valid.memory.invalidSince.size).toBe(0);
    expect(planNetDir([half, calico], entry, valid.memory, halfWrittenGraceMs + 500).plan.kind).toBe("wait");
  });

  it("takes our entry out of a config that stopped being the active one", () => {
    const plan = applied(
      planNetDir(
        [conflist("05-cilium.conflist", ["cilium-cni"]), conflist("10-calico.conflist", ["calico", "meshcni"])],
        entry,
        freshMemory,
        0,
      ).plan,
    );
    expect(plan.removals.map(({ name, text }) => [name, JSON.parse(text).plugins])).toEqual([["10-calico.conflist", [{ type: "calico" }]]]);
    expect(plan.write?.name).toBe("05-cilium.conflist");
  });

  it("wraps a lone .conf into a .conflist that replaces it", () => {
    const conf = { name: "10-mynet.conf", text: JSON.stringify({ cniVersion: "0.4.0", name: "mynet", type: "bridge" }) };
    expect(applied(planNetDir([conf], entry, freshMemory, 0).plan).write).toMatchObject({
      name: "10-mynet.conflist",
      replaces: "10-mynet.conf",
    });
  });

  it("says when it replaces duplicate entries", () => {
    const plan = applied(
      planNetDir([conflist("10-calico.conflist", ["calico", "meshcni", "portmap", "meshcni"])], entry, freshMemory, 0).plan,
    );
    expect(plan.write).toMatchObject({ duplicates: true });
  });

  it("holds the write back once another agent keeps removing the entry, and names the file", () => {
    let memory: NetDirMemory = planNetDir([conflist("05-cilium.conflist", ["cilium-cni"])], entry, freshMemory, 0).memory;
    let plan: NetDirPlan | undefined;
    for (let i = 1; i <= fightThreshold; i++) {
      // Each time, the other agent has put back its own file, without our entry.
      ({ plan, memory } = planNetDir([conflist("05-cilium.conflist", ["cilium-cni"], { round: i })], entry, memory, i * 10));
    }
    const held = applied(plan!);
    expect(held.write).toBeUndefined();
    expect(held.fight).toEqual({ file: "05-cilium.conflist", holdMs: 1000, started: { rechains: fightThreshold, backoffMs: 1000 } });
    const later = planNetDir([conflist("05-cilium.conflist", ["cilium-cni"], { round: 99 })], entry, memory, fightThreshold * 10 + 1000);
    expect(applied(later.plan).write).toMatchObject({ cause: "entry_removed" });
  });

  it("does nothing without a valid config, never writing one of its own", () => {
    expect(planNetDir([], entry, freshMemory, 0).plan).toEqual({
      kind: "apply",
      active: undefined,
      removals: [],
      fallbacks: [],
      write: undefined,
      fight: undefined,
    });
  });
});
