import { beforeEach, describe, expect, it } from "vitest";
import { CniError } from "../../../src/cni/errors.js";
import { add } from "../../../src/plugin/add.js";
import { check } from "../../../src/plugin/check.js";
import type { FakeNode } from "../../kit/plugin/fake-node.js";
import { depsNotingModes, nodeWithPods, pluginRequest, podNetns, recordBackend } from "../../kit/plugin/requests.js";

const netns = podNetns;

/** The CNI error CHECK threw. */
async function checkFailure(promise: Promise<unknown>): Promise<CniError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(CniError);
  return error as CniError;
}

describe("CHECK", () => {
  let node: FakeNode;
  beforeEach(() => {
    node = nodeWithPods();
  });

  it("passes right after ADD, and for an unmeshed pod without our rules", async () => {
    await add(pluginRequest("ADD", { pod: ["shop", "web"] }), node.deps());
    await expect(check(pluginRequest("CHECK", { pod: ["shop", "web"] }), node.deps())).resolves.toBeUndefined();
    node.addNetns("/var/run/netns/batch");
    await add(pluginRequest("ADD", { pod: ["shop", "batch"], netns: "/var/run/netns/batch" }), node.deps());
    await expect(
      check(pluginRequest("CHECK", { pod: ["shop", "batch"], netns: "/var/run/netns/batch" }), node.deps()),
    ).resolves.toBeUndefined();
    expect(node.openRunners).toBe(0);
  });

  it("inspects with the backend ADD recorded, where the node's changed since (a pod the agent has not moved yet)", async () => {
    await add(pluginRequest("ADD", { pod: ["shop", "web"] }), node.deps());
    recordBackend(node, "legacy");
    const { deps, modes } = depsNotingModes(node);
    await expect(check(pluginRequest("CHECK", { pod: ["shop", "web"] }), deps)).resolves.toBeUndefined();
    expect(modes).toEqual(["legacy"]);
  });

  it("fails with code 100, the differences in the details, when a rule is gone", async () => {
    await add(pluginRequest("ADD", { pod: ["shop", "web"] }), node.deps());
    node.table(netns).restore("*nat\n-D PROXY_INIT_OUTPUT -o lo -m comment --comment proxy-init/ignore-loopback -j RETURN\nCOMMIT\n");
    const error = await checkFailure(check(pluginRequest("CHECK", { pod: ["shop", "web"] }), node.deps()));
    expect(error.code).toBe(100);
    expect(error.message).toBe("pod shop/web: redirect differs from plan (1 difference)");
    expect(error.details).toBe("ipv4: PROXY_INIT_OUTPUT: missing rule: -o lo -m comment --comment proxy-init/ignore-loopback -j RETURN");
  });

  it("fails for an unmeshed pod that holds our chains", async () => {
    await add(pluginRequest("ADD", { pod: ["shop", "web"] }), node.deps());
    const error = await checkFailure(check(pluginRequest("CHECK", { pod: ["shop", "batch"] }), node.deps()));
    expect(error.code).toBe(100);
    expect(error.details).toBe("ipv4: redirect rules are present but the pod is not meshed");
  });

  it("names the container when the runtime names no pod", async () => {
    await add(pluginRequest("ADD", { pod: ["shop", "web"] }), node.deps());
    const error = await checkFailure(check(pluginRequest("CHECK", { containerId: "c9" }), node.deps()));
    expect(error.message).toContain("container c9");
  });

  it("with simulate, only looks the pod up", async () => {
    await check(pluginRequest("CHECK", { pod: ["shop", "web"], conf: { linkerd: { simulate: true } } }), node.deps());
    expect(node.apiReads).toEqual(["pod shop/web", "namespace shop"]);
    expect(node.openRunners).toBe(0);
  });

  it("closes the runner it prepared when the lookup fails", async () => {
    node.kubeconfigProblem = "cannot read kubeconfig /etc/cni/net.d/ZZZ-meshcni-kubeconfig: ENOENT";
    await expect(check(pluginRequest("CHECK", { pod: ["shop", "web"] }), node.deps())).rejects.toThrow(
      "cannot decide the redirect for pod shop/web: cannot read kubeconfig",
    );
    expect(node.openRunners).toBe(0);
  });
});
