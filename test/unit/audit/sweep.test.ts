import type { V1Pod } from "@kubernetes/client-node";
import { beforeEach, describe, expect, it } from "vitest";
import type { SweepRequest } from "../../../src/audit/contract.js";
import { plansFor } from "../../../src/audit/expectation.js";
import { allProtected, recordGraceMs, staleRecords, sweep } from "../../../src/audit/sweep.js";
import { parseNetConf } from "../../../src/mesh/netconf.js";
import { add } from "../../../src/plugin/add.js";
import { type PodOptions, podObject } from "../../kit/api-server.js";
import { FakeNode, pluginRequest } from "../../kit/fake-node.js";
import { fakeSweepIo, netnsDir, stateDir } from "../../kit/fake-sweep.js";

const conf = parseNetConf(JSON.stringify({ cniVersion: "1.0.0", name: "k8s", type: "meshcni" }));
const options = (policy: SweepRequest["policy"], more: Partial<SweepRequest["limits"]> = {}): SweepRequest => ({
  node: "n1",
  pods: [],
  ...(policy ? { policy } : {}),
  limits: { excludeNamespaces: [], skipUids: [], evictionsLeft: 2, ...more },
  dirs: { hostRoot: "/", stateDir, netDir: "/etc/cni/net.d", netnsDirs: [netnsDir], criSocket: "" },
});

describe("a sweep", () => {
  let node: FakeNode;
  let ip = 10;
  /** A running meshed pod with a netns holding its IP (the runtime's, not meshcni's: no rules yet). */
  const startPod = (name: string, podOptions: PodOptions = {}) => {
    const podIP = `10.1.0.${ip++}`;
    const pod = podObject("shop", name, { proxy: "container", nodeName: "n1", podIP, ...podOptions }) as V1Pod;
    node.addPod(pod);
    node.addNetns(`${netnsDir}/cni-${name}`, [podIP]);
    node.sandboxes.set(pod.metadata!.uid!, `${netnsDir}/cni-${name}`);
    return { pod, netns: `${netnsDir}/cni-${name}` };
  };
  /** Rules as linkerd-cni (or meshcni without its record) would have written them. */
  const writeRules = async (pod: V1Pod, netns: string) =>
    node.enter(netns, async () => {
      await node.redirector("nft").apply(plansFor(conf, pod, undefined, []));
    });
  /** A pod that went through meshcni's ADD, record and all. */
  const addedPod = async (name: string, podOptions: PodOptions = {}) => {
    const { pod, netns } = startPod(name, podOptions);
    await add(pluginRequest("ADD", { pod: ["shop", name], netns, containerId: `c-${name}`, conf: { state_dir: stateDir } }), node.deps());
    return { pod, netns };
  };

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
