import { beforeEach, describe, expect, it } from "vitest";
import { sweep } from "../../../src/audit/sweep.js";
import { fakeSweepIo, netnsDir } from "../../kit/audit/fake-sweep.js";
import { sweepOptions as options, sweepScene } from "../../kit/audit/sweep-scene.js";
import { FakeNode } from "../../kit/plugin/fake-node.js";

/** A sweep writes a pod's plan only into a netns tied to that pod (issue 57's second finding). */
describe("a sweep, against a record that names a netns not the pod's", () => {
  let node: FakeNode;
  const { addedPod } = sweepScene(() => node);

  beforeEach(() => {
    node = new FakeNode();
  });

  /** Points a pod's ADD record at another netns, as a hand on the node's disk could. */
  const aimRecord = (pod: string, netns: string) => {
    const [name, record] = [...node.records].find(([, found]) => found.pod.name === pod)!;
    node.records.set(name, { ...record, netns });
  };

  it("never writes a tenant's plan into a victim's netns its record names: both pods claim it, neither is acted on", async () => {
    const victim = await addedPod("victim");
    await addedPod("tenant", { annotations: { "config.linkerd.io/skip-inbound-ports": "1-65535" } });
    const before = node.rules(victim.netns);
    aimRecord("tenant", victim.netns);
    const report = await sweep(options("redirect"), fakeSweepIo(node).io);
    const reason = `netns ${victim.netns} is claimed by 2 pods`;
    expect(report.pods).toEqual([
      expect.objectContaining({ name: "tenant", status: "unknown", details: [expect.stringContaining(reason)] }),
      expect.objectContaining({ name: "victim", status: "unknown", details: [expect.stringContaining(reason)] }),
    ]);
    expect(report.pods.map((pod) => pod.action)).toEqual([undefined, undefined]);
    expect(node.rules(victim.netns)).toEqual(before);
  });

  it("never enters a netns outside the runtime's netns dirs that a record names (the host's own, say)", async () => {
    await addedPod("tenant");
    node.addNetns("/proc/1/ns/net");
    aimRecord("tenant", "/proc/1/ns/net");
    const report = await sweep(options("redirect"), fakeSweepIo(node).io);
    expect(report.pods).toEqual([
      expect.objectContaining({
        name: "tenant",
        status: "unknown",
        details: [`its ADD record names netns /proc/1/ns/net, which is not in ${netnsDir}: not entered`],
      }),
    ]);
    expect(node.entries.get("/proc/1/ns/net")).toBeUndefined();
    expect(node.rules("/proc/1/ns/net")).toEqual([]);
  });

  it("judges the netns a record names, and writes nothing there when the runtime says the pod's sandbox has another", async () => {
    const { netns } = await addedPod("tenant");
    const other = `${netnsDir}/cni-unmeshed`;
    node.addNetns(other, ["10.9.9.9"]);
    aimRecord("tenant", other);
    const report = await sweep(options("redirect"), fakeSweepIo(node).io);
    expect(report.pods).toEqual([
      expect.objectContaining({
        name: "tenant",
        status: "missing",
        skipped: `not acted on: its ADD record names netns ${other}, but the container runtime says the pod's sandbox has ${netns}`,
        unconfirmed: `its ADD record names netns ${other}, but the container runtime says the pod's sandbox has ${netns}`,
      }),
    ]);
    expect(report.pods[0]!.action).toBeUndefined();
    expect(node.rules(other)).toEqual([]);
  });

  it("without a container runtime to confirm a recorded netns, reports the pod and writes nothing", async () => {
    const { pod, netns } = await addedPod("tenant");
    await node.enter(netns, () => node.redirector("nft").remove(["ipv4"]));
    const { io, writes } = fakeSweepIo(node, { noRuntime: true });
    const report = await sweep(options("redirect"), io);
    expect(report.pods).toEqual([
      expect.objectContaining({ name: pod.metadata!.name, status: "missing", skipped: expect.stringContaining("no container runtime") }),
    ]);
    expect(node.rules(netns)).toEqual([]);
    expect(writes.events).toEqual([]);
    // With the runtime to ask, the same sweep repairs it.
    const repaired = await sweep(options("redirect"), fakeSweepIo(node).io);
    expect(repaired.pods[0]).toMatchObject({ status: "missing", action: "redirect", result: "done" });
    expect(node.rules(netns)).not.toEqual([]);
  });
});
