import type { V1Pod } from "@kubernetes/client-node";
import { beforeEach, describe, expect, it } from "vitest";
import { recordGraceMs, staleRecords } from "../../../src/audit/stale.js";
import { sweep } from "../../../src/audit/sweep.js";
import { podObject } from "../../kit/api/server.js";
import { fakeSweepIo, netnsDir } from "../../kit/audit/fake-sweep.js";
import { sweepOptions as options, sweepScene } from "../../kit/audit/sweep-scene.js";
import { FakeNode } from "../../kit/plugin/fake-node.js";

describe("a sweep: claimed IPs, unknown pods, the runtime's sandboxes, stale records", () => {
  let node: FakeNode;
  const { startPod, writeRules, addedPod } = sweepScene(() => node);

  beforeEach(() => {
    node = new FakeNode();
  });

  describe("a pod that claims another pod's IP (NET_ADMIN in its own netns)", () => {
    /** The victim, protected by linkerd-cni's rules (no meshcni record); the attacker's netns, newer, holds the victim's IP too. */
    const claimed = async () => {
      const { pod, netns } = startPod("victim");
      await writeRules(pod, netns);
      node.addNetns(`${netnsDir}/cni-attacker`, [pod.status!.podIP!]);
      return { pod, netns };
    };

    it.each(["evict", "redirect"] as const)(
      "with the runtime to ask, --repair %s judges the victim by its own netns: adopted, left alone",
      async (policy) => {
        const { netns } = await claimed();
        const { io, writes } = fakeSweepIo(node);
        const report = await sweep(options(policy), io);
        expect(report.pods).toEqual([expect.objectContaining({ name: "victim", status: "adopted" })]);
        expect(writes.evictions).toEqual([]);
        expect([...node.records.values()].map((record) => record.netns)).toEqual([netns]);
      },
    );

    it.each(["evict", "redirect", "label"] as const)(
      "without a runtime, --repair %s takes an IP seen in two netns for nothing: unknown, no action, no record",
      async (policy) => {
        await claimed();
        const { io, writes } = fakeSweepIo(node, { noRuntime: true });
        const report = await sweep(options(policy), io);
        expect(report.pods).toEqual([
          expect.objectContaining({
            name: "victim",
            status: "unknown",
            details: [expect.stringContaining("is in 2 netns (/var/run/netns/cni-victim, /var/run/netns/cni-attacker)")],
          }),
        ]);
        expect(report.pods[0]!.action).toBeUndefined();
        expect(writes).toEqual({ events: [], labels: [], evictions: [] });
        expect(node.records.size).toBe(0);
      },
    );

    it("without a runtime, one netns holding the IP on eth0 is only a hint: unknown, saying what it holds, never acted on", async () => {
      const { pod } = startPod("lonely");
      const { io, writes } = fakeSweepIo(node, { noRuntime: true });
      const report = await sweep(options("evict"), io);
      expect(report.pods[0]).toMatchObject({
        status: "unknown",
        details: [expect.stringContaining(`only its IP points to netns ${netnsDir}/cni-lonely (no container runtime to confirm it`)],
      });
      expect(report.pods[0]!.details[0]).toContain("which holds no redirect");
      expect(writes.evictions).toEqual([]);
      node.addNetns(`${netnsDir}/cni-lo`, [pod.status!.podIP!], "lo");
      node.netns.delete(`${netnsDir}/cni-lonely`);
      node.addresses.delete(`${netnsDir}/cni-lonely`);
      const onLo = await sweep(options("evict"), fakeSweepIo(node, { noRuntime: true }).io);
      expect(onLo.pods[0]!.details[0]).toBe(`the pod's IP ${pod.status!.podIP} is on lo in ${netnsDir}/cni-lo, not on eth0`);
    });
  });

  it("calls a pod the runtime has no sandbox for unknown, and one whose plan cannot be made unknown, saying why", async () => {
    node.addPod(podObject("shop", "ghost", { proxy: "container", nodeName: "n1", podIP: "10.9.9.9" }) as V1Pod);
    const { pod } = startPod("odd", { annotations: { "config.linkerd.io/skip-subnets": "everything" } });
    const { io } = fakeSweepIo(node);
    const report = await sweep(options("redirect"), io);
    expect(report.pods.map((found) => [found.name, found.status, found.details[0]])).toEqual([
      ["ghost", "unknown", "the container runtime has no ready sandbox for the pod"],
      [
        "odd",
        "unknown",
        expect.stringContaining("cannot compute meshcni's plan: pod shop/odd: pod annotation config.linkerd.io/skip-subnets"),
      ],
    ]);
    expect(pod.metadata?.name).toBe("odd");
  });

  it("asks the runtime once for all the pods without a record, and enters no netns it names outside the netns dirs", async () => {
    for (const name of ["a", "b", "c"]) startPod(name);
    const { pod } = startPod("escaped");
    // A runtime (or whatever answers on its socket) naming a path that leaves the netns dirs.
    node.sandboxes.set(pod.metadata!.uid!, `${netnsDir}/../../proc/1/ns/net`);
    const report = await sweep(options(undefined), fakeSweepIo(node).io);
    expect(node.runtimeLists).toBe(1);
    expect(report.pods.find((found) => found.name === "escaped")).toMatchObject({
      status: "unknown",
      details: [`the container runtime names netns ${netnsDir}/../../proc/1/ns/net, which is not in ${netnsDir}`],
    });
    expect(node.entries.has(`${netnsDir}/../../proc/1/ns/net`)).toBe(false);
    expect(report.pods.filter((found) => found.status === "adopted" || found.status === "missing")).toHaveLength(3);
  });

  it("removes records whose pod left the node, whose netns or whose sandbox is gone, never a young one", async () => {
    const { netns } = await addedPod("gone-netns");
    await addedPod("gone-pod");
    await addedPod("gone-sandbox");
    await addedPod("stays");
    node.netns.delete(netns);
    node.pods.delete("shop/gone-pod");
    // The runtime removed the sandbox, leaving its netns mounted (and never calls CNI GC).
    node.removedSandboxes.add("c-gone-sandbox");
    const later = Date.now() + recordGraceMs + 1000;
    expect((await sweep(options("redirect"), fakeSweepIo(node).io)).recordsRemoved).toEqual({ podGone: 0, netnsGone: 0, sandboxGone: 0 });
    // A runtime that cannot say which sandboxes it has removes nothing on its silence.
    const silent = await sweep(options("redirect"), fakeSweepIo(node, { now: () => later, noRuntime: true }).io);
    expect(silent.recordsRemoved).toEqual({ podGone: 1, netnsGone: 1, sandboxGone: 0 });
    const report = await sweep(options("redirect"), fakeSweepIo(node, { now: () => later }).io);
    expect(report.recordsRemoved).toEqual({ podGone: 0, netnsGone: 0, sandboxGone: 1 });
    expect([...node.records.values()].map((record) => record.pod.name)).toEqual(["stays"]);
  });

  it("finds stale records by pod, netns and sandbox (pure)", () => {
    const record = (uid: string, netns: string, time: string) => ({
      version: 1 as const,
      state: "added" as const,
      pod: { namespace: "shop", name: uid, uid },
      containerId: uid,
      ifname: "eth0",
      netns,
      backend: "nft" as const,
      plans: [],
      time,
    });
    const old = "2026-01-01T00:00:00Z";
    const now = Date.parse(old) + recordGraceMs;
    const found = staleRecords(
      [record("a", "/n/a", old), record("b", "/n/b", old), record("c", "/n/gone", old), record("d", "/n/d", old)],
      new Set(["b", "c", "d"]),
      (netns) => netns !== "/n/gone",
      now,
      new Set(["a", "b", "c"]),
    );
    expect(found.map(({ record: stale, reason }) => [stale.pod.uid, reason])).toEqual([
      ["a", "podGone"],
      ["c", "netnsGone"],
      ["d", "sandboxGone"],
    ]);
    expect(staleRecords([record("d", "/n/d", old)], new Set(["d"]), () => true, now, undefined)).toEqual([]);
  });
});
