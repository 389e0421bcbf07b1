import { beforeEach, describe, expect, it } from "vitest";
import { rotated } from "../../../src/audit/scan.js";
import { sweep } from "../../../src/audit/sweep.js";
import { inspectPlans } from "../../../src/redirect/redirector.js";
import { fakeSweepIo } from "../../kit/audit/fake-sweep.js";
import { sweepOptions as options, sweepScene } from "../../kit/audit/sweep-scene.js";
import { FakeNode } from "../../kit/plugin/fake-node.js";

/** One pod's netns can never stop the others' audit and repair (issue 57's third finding). */
describe("a sweep's time in netns", () => {
  let node: FakeNode;
  const { addedPod } = sweepScene(() => node);

  beforeEach(() => {
    node = new FakeNode();
  });

  /** A clock that moves one tick each time it is read, from 0. */
  const ticking = () => {
    let tick = 0;
    return () => tick++;
  };

  it("starts no visit past its deadline: the pods left are said not looked into, the sweep still reports", async () => {
    for (const name of ["a", "b", "c"]) await addedPod(name);
    const report = await sweep(options(undefined), fakeSweepIo(node, { scanTime: { deadline: 2, turn: 0, now: ticking() } }).io);
    expect(report.pods.map((pod) => [pod.name, pod.status])).toEqual([
      ["a", "protected"],
      ["b", "protected"],
      ["c", "unknown"],
    ]);
    expect(report.pods[2]!.details).toEqual([expect.stringContaining("this sweep's time for netns ran out on other pods")]);
  });

  it("starts each sweep's visits elsewhere, so the same pods are not always the ones left", async () => {
    for (const name of ["a", "b", "c"]) await addedPod(name);
    const left = async (turn: number) => {
      const io = fakeSweepIo(node, { scanTime: { deadline: 2, turn, now: ticking() } }).io;
      return (await sweep(options(undefined), io)).pods.filter((pod) => pod.status === "unknown").map((pod) => pod.name);
    };
    expect([await left(0), await left(1), await left(2), await left(3)]).toEqual([["c"], ["a"], ["b"], ["c"]]);
    expect(rotated([1, 2, 3], 4)).toEqual([2, 3, 1]);
    expect(rotated([], 3)).toEqual([]);
  });

  it("takes a netns whose rules cannot be read (more than a dump takes) for unprotected: drifted, an Event, repaired", async () => {
    const { pod } = await addedPod("stuffed");
    const inStuffed = () => node.currentAddresses().some((entry) => entry.address === pod.status?.podIP);
    await addedPod("plain");
    let reads = 0;
    const { io, writes } = fakeSweepIo(node, {
      inspect: async (redirector, plans) => {
        if (inStuffed() && reads++ === 0) throw new Error("nftables: list rules (ipv4) failed: EFBIG (27): more than 8 MiB");
        return inspectPlans(redirector, plans);
      },
    });
    const report = await sweep(options("redirect"), io);
    expect(report.pods.map((pod) => [pod.name, pod.status])).toEqual([
      ["plain", "protected"],
      ["stuffed", "drifted"],
    ]);
    expect(report.pods[1]).toMatchObject({
      details: [
        "its netns could not be read (nftables: list rules (ipv4) failed: EFBIG (27): more than 8 MiB): what it holds is unknown, so it is not taken as protected",
      ],
      action: "redirect",
      result: "done",
    });
    expect(writes.events).toEqual([expect.objectContaining({ pod: "shop/stuffed", reason: "MeshRedirectDrifted" })]);
  });
});
