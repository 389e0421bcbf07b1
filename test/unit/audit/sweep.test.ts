import { beforeEach, describe, expect, it } from "vitest";
import type { SweepRequest } from "../../../src/audit/contract.js";
import { allProtected, sweep } from "../../../src/audit/sweep.js";
import { fakeSweepIo, netnsDir } from "../../kit/audit/fake-sweep.js";
import { sweepOptions as options, sweepScene } from "../../kit/audit/sweep-scene.js";
import { FakeNode } from "../../kit/plugin/fake-node.js";

describe("a sweep", () => {
  let node: FakeNode;
  const { startPod, writeRules, addedPod } = sweepScene(() => node);

  beforeEach(() => {
    node = new FakeNode();
  });

  it("calls ADDed pods protected and linkerd-cni's pods adopted; a sweep records the adopted, and writes nothing to the API", async () => {
    await addedPod("checkout");
    const legacy = startPod("cart");
    await writeRules(legacy.pod, legacy.netns);
    const { io, writes } = fakeSweepIo(node);
    const audit = await sweep(options(undefined), io);
    expect(audit.pods.map((pod) => [pod.name, pod.status])).toEqual([
      ["cart", "adopted"],
      ["checkout", "protected"],
    ]);
    expect(node.records.size).toBe(1);
    const swept = await sweep(options("redirect"), io);
    expect(swept.pods.map((pod) => [pod.name, pod.status])).toEqual([
      ["cart", "adopted"],
      ["checkout", "protected"],
    ]);
    expect([...node.records.values()].find((record) => record.pod.name === "cart")).toMatchObject({
      containerId: "adopted-uid-shop-cart",
      netns: legacy.netns,
    });
    expect(writes).toEqual({ events: [], labels: [], evictions: [] });
    expect((await sweep(options(undefined), io)).pods.map((pod) => pod.status)).toEqual(["protected", "protected"]);
  });

  it("enters each netns once, finding a pod without a record by its IP", async () => {
    for (const name of ["a", "b", "c"]) await addedPod(name);
    startPod("d");
    startPod("e");
    const { io } = fakeSweepIo(node);
    node.entries.clear();
    const report = await sweep(options(undefined), io);
    expect(report.summary).toMatchObject({ protected: 3, missing: 2 });
    expect([...node.entries.values()].every((count) => count === 1)).toBe(true);
    expect(node.entries.size).toBe(5);
  });

  it("redirect: writes the plan into a missing pod's netns and records it; the Event says what was done", async () => {
    const { pod, netns } = startPod("cart");
    const { io, writes } = fakeSweepIo(node);
    const report = await sweep(options("redirect"), io);
    expect(report.pods[0]).toMatchObject({ name: "cart", status: "missing", action: "redirect", result: "done" });
    expect(allProtected(report)).toBe(true);
    node.entries.clear();
    expect((await sweep(options(undefined), io)).pods[0]!.status).toBe("protected");
    expect(node.rules(netns)).toContain(
      "PROXY_INIT_REDIRECT -p tcp -m comment --comment proxy-init/redirect-all-incoming-to-proxy-port -j REDIRECT --to-ports 4143",
    );
    expect(writes.events).toEqual([
      {
        pod: "shop/cart",
        reason: "MeshRedirectMissing",
        action: "WriteRedirect",
        message: expect.stringContaining("meshcni wrote the planned rules"),
      },
    ]);
    expect(pod.metadata?.uid).toBe("uid-shop-cart");
  });

  it("redirect: restores a drifted pod's recorded plan; the Event's reason says drifted", async () => {
    const { netns } = await addedPod("search");
    const planned = node.rules(netns);
    node.table(netns).restore("*nat\n-D PROXY_INIT_OUTPUT -o lo -m comment --comment proxy-init/ignore-loopback -j RETURN\nCOMMIT\n");
    const { io, writes } = fakeSweepIo(node);
    const report = await sweep(options("redirect"), io);
    expect(report.pods[0]).toMatchObject({ status: "drifted", action: "redirect", result: "done" });
    expect(node.rules(netns).sort()).toEqual(planned.sort());
    expect(writes.events[0]?.reason).toBe("MeshRedirectDrifted");
  });

  it("evict: through the Eviction API within the budget; a 429 is no Event and no budget spent; no controller: a label", async () => {
    for (const name of ["a", "b", "c"]) startPod(name, { owned: true });
    startPod("bare");
    const { io, writes } = fakeSweepIo(node, { evictions: new Map([["shop/a", "blocked"]]) });
    const report = await sweep(options("evict", { evictionsLeft: 1 }), io);
    const byName = Object.fromEntries(report.pods.map((pod) => [pod.name, pod]));
    expect(byName.a).toMatchObject({ action: "evict", result: "blocked" });
    expect(byName.b).toMatchObject({ action: "evict", result: "done" });
    expect(byName.c).toMatchObject({ skipped: expect.stringContaining("rate limit") });
    expect(byName.bare).toMatchObject({ action: "label", result: "done" });
    expect(writes.evictions).toEqual(["shop/b"]);
    expect(writes.labels).toEqual(["shop/bare"]);
    expect(writes.events.map((event) => `${event.pod} ${event.action}`).sort()).toEqual(["shop/b Evict", "shop/bare Label"]);
  });

  it("evict: throttling is no PDB block (retried after the wait, no Event); several PDBs is refused for good, said in words", async () => {
    for (const name of ["slow", "split"]) startPod(name, { owned: true });
    const { io, writes } = fakeSweepIo(node, {
      evictions: new Map([
        ["shop/slow", "throttled"],
        ["shop/split", "several-budgets"],
      ]),
    });
    const report = await sweep(options("evict", { retryMinutes: 10 }), io);
    const byName = Object.fromEntries(report.pods.map((pod) => [pod.name, pod]));
    expect(byName.slow).toMatchObject({ action: "evict", result: { throttledMs: 2000 } });
    expect(byName.split).toMatchObject({
      action: "evict",
      result: {
        failed: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
        permanent: true,
      },
    });
    expect(writes.events.map((event) => event.pod)).toEqual(["shop/split"]);
    expect(writes.events[0]!.message).toContain(
      "meshcni cannot evict it: This pod has more than one PodDisruptionBudget, which the eviction subresource does not support. It will not try again: give the pod a single PodDisruptionBudget, or restart it to get the redirect.",
    );
    expect(writes.events[0]!.message).not.toMatch(/HTTP-Code|Headers/);
  });

  it("says when a failed repair is tried again: the agent's wait, or by hand", async () => {
    const { pod } = startPod("cart");
    node.netns.delete(`${netnsDir}/cni-cart`);
    node.addNetns(`${netnsDir}/cni-cart`, [pod.status!.podIP!]);
    node.failRestore.ipv4 = "iptables-restore: line 3 failed";
    const agent = fakeSweepIo(node);
    await sweep(options("redirect", { retryMinutes: 10 }), agent.io);
    expect(agent.writes.events[0]!.message).toContain("; it tries again in 10 minutes.");
    const byHand = fakeSweepIo(node);
    await sweep(options("redirect"), byHand.io);
    expect(byHand.writes.events[0]!.message).toContain("; run meshcni audit --repair again to retry.");
  });

  it("reads the node from the request's view (the agent's caches), asking the API for no pod or namespace", async () => {
    await addedPod("checkout", { annotations: {} });
    const { io } = fakeSweepIo(node);
    const refused = async (): Promise<never> => {
      throw new Error("the API was asked");
    };
    const pods = [...node.pods.values()];
    const view = { pods, namespaces: [{ metadata: { name: "shop" } }] } as SweepRequest["view"];
    const report = await sweep({ ...options(undefined), view }, { ...io, api: { ...io.api, listPods: refused, readNamespace: refused } });
    expect(report.pods.map((pod) => [pod.name, pod.status])).toEqual([["checkout", "protected"]]);
  });

  it("audits without a policy and changes nothing", async () => {
    startPod("cart");
    const { io, writes } = fakeSweepIo(node);
    const report = await sweep(options(undefined), io);
    expect(report.pods[0]).toMatchObject({ status: "missing" });
    expect(report.pods[0]!.action).toBeUndefined();
    expect(node.records.size).toBe(0);
    expect(writes.events).toEqual([]);
    expect(allProtected(report)).toBe(false);
  });
});
