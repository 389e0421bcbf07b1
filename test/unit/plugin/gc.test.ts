import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { add } from "../../../src/plugin/add.js";
import { gc } from "../../../src/plugin/gc.js";
import { podObject } from "../../kit/api/server.js";
import { FakeNode } from "../../kit/plugin/fake-node.js";
import { pluginRequest } from "../../kit/plugin/requests.js";

describe("GC", () => {
  it("removes the records of attachments the runtime no longer lists, and nothing without the list", async () => {
    const node = new FakeNode();
    node.addPod(podObject("shop", "web", { proxy: "container" }) as V1Pod);
    for (const containerId of ["a", "b"]) {
      node.addNetns(`/var/run/netns/${containerId}`);
      await add(pluginRequest("ADD", { pod: ["shop", "web"], containerId, netns: `/var/run/netns/${containerId}` }), node.deps());
    }
    await gc(pluginRequest("GC", { conf: { cniVersion: "1.1.0" } }), node.deps());
    expect(node.records.size).toBe(2);
    await gc(
      pluginRequest("GC", { conf: { cniVersion: "1.1.0", "cni.dev/valid-attachments": [{ containerID: "b", ifname: "eth0" }] } }),
      node.deps(),
    );
    expect([...node.records.values()].map((record) => record.containerId)).toEqual(["b"]);
    expect(node.rules("/var/run/netns/a")).not.toEqual([]);
  });
});
