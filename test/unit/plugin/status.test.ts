import { beforeEach, describe, expect, it } from "vitest";
import { CniError } from "../../../src/cni/errors.js";
import { namedBinaries } from "../../../src/iptables/binaries.js";
import { status } from "../../../src/plugin/status.js";
import { FakeNode } from "../../kit/plugin/fake-node.js";
import { pluginRequest } from "../../kit/plugin/requests.js";

describe("STATUS", () => {
  let node: FakeNode;
  beforeEach(() => {
    node = new FakeNode();
  });
  const request = (linkerd: Record<string, unknown> = {}) => pluginRequest("STATUS", { conf: { cniVersion: "1.1.0", linkerd } });

  it("is ready with a usable kubeconfig and the backend's restore binaries, asking no API", async () => {
    await expect(status(request(), node.deps())).resolves.toBeUndefined();
    expect(node.apiReads).toEqual([]);
  });

  it("says code 50 with every reason ADD could not work", async () => {
    node.kubeconfigProblem = "cannot read kubeconfig /k: ENOENT";
    node.missingBinaries.add("ip6tables-legacy-restore");
    const error = await status(request({ "iptables-mode": "legacy", ipv6: true }), node.deps()).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(CniError);
    expect(error).toMatchObject({
      code: 50,
      message:
        "meshcni cannot serve ADD: cannot read kubeconfig /k: ENOENT; ip6tables-legacy-restore not found for iptables backend legacy",
    });
  });

  it("with no iptables binaries, auto means nftables: ready while nf_tables answers over netlink, and says which backend", async () => {
    for (const binary of namedBinaries(["restore"])) node.missingBinaries.add(binary);
    await expect(status(request(), node.deps())).resolves.toBeUndefined();
    expect(node.logs).toContainEqual(expect.objectContaining({ message: "ADD can be served", fields: { backend: "nftables" } }));
    node.nftablesProblem = new Error("nftables: list tables (ipv4) failed: EPROTONOSUPPORT (93)");
    await expect(status(request(), node.deps())).rejects.toMatchObject({
      code: 50,
      message:
        "meshcni cannot serve ADD: nf_tables does not answer over netlink: nftables: list tables (ipv4) failed: EPROTONOSUPPORT (93)",
    });
  });
});
