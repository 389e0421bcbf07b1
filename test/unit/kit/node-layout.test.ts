import { describe, expect, it } from "vitest";
import { clusterNodesSite, inNode, nodeContainerd, nodeLayout, nodeRoutes, onHost } from "../../kit/cluster/node-layout.js";

describe("the layout of a multi-node cluster's nodes", () => {
  const nodes = [1, 2, 3].map((index) => nodeLayout(index));

  it("gives each node its own address, pod range, names, dirs and cgroup root", () => {
    for (const key of ["ip", "podCidr", "netns", "veth", "dir", "mountNs", "cgroupRoot"] as const)
      expect(new Set(nodes.map((node) => node[key])).size, key).toBe(nodes.length);
    expect(nodes[1]).toMatchObject({ name: "node-2", ip: "10.254.0.12", podCidr: "10.252.2.0/24", netns: "mcl-node-2" });
    // The single node's pods are 10.252.0.0/24: no node of several shares it.
    expect(nodes.map((node) => node.podCidr)).not.toContain("10.252.0.0/24");
    expect(() => nodeLayout(0)).toThrow("node index 0");
    expect(() => nodeLayout(1.5)).toThrow("node index 1.5");
  });

  it("routes each node to every other node's pods through that node, never to its own", () => {
    expect(nodeRoutes(nodes[0]!, nodes)).toEqual([
      ["10.252.2.0/24", "via", "10.254.0.12"],
      ["10.252.3.0/24", "via", "10.254.0.13"],
    ]);
  });

  it("finds on the host what a node sees on its bound paths, and refuses a path of the host's", () => {
    const node = nodes[2]!;
    expect(onHost(node, nodeContainerd(node).socket)).toBe(`${clusterNodesSite.dir}/nodes/node-3/run-containerd/containerd.sock`);
    expect(onHost(node, "/etc/cni/net.d")).toBe(`${clusterNodesSite.dir}/nodes/node-3/cni-net.d`);
    expect(() => onHost(node, "/etc/cni/net.dx")).toThrow("not on a dir of node-3's own");
    expect(() => onHost(node, "/var/run/meshcni")).toThrow("not on a dir");
  });

  it("runs a command in the node's netns and mount namespace, both", () => {
    expect(inNode(nodes[0]!, ["kubelet", "--v=2"])).toEqual([
      "nsenter",
      "--net=/run/netns/mcl-node-1",
      `--mount=${clusterNodesSite.dir}/ns/node-1.mnt`,
      "--",
      "kubelet",
      "--v=2",
    ]);
  });
});
