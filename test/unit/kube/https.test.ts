import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { sharedAgent } from "../../../src/kube/https.js";
import { createNodeApi } from "../../../src/kube/node-api.js";
import { getJson } from "../../../src/kube/transport.js";
import { FakeApiServer } from "../../kit/api/server.js";
import { kubeConfigOf } from "../../kit/common.js";

describe("the agent's one HTTP client", () => {
  let api: FakeApiServer;
  beforeEach(async () => {
    api = await new FakeApiServer().start();
  });
  afterEach(async () => {
    await api.stop();
  });

  it("makes its requests, lists and the generated APIs' alike, over one kept-alive TLS connection (client-node makes an agent per request)", async () => {
    const config = kubeConfigOf(api.writeAgentKubeconfig());
    const node = createNodeApi(config, "n1");
    api.addNamespace({ metadata: { name: "shop" } });
    for (let i = 0; i < 3; i++) {
      await getJson(config, "/api/v1/pods", { fieldSelector: "spec.nodeName=n1" }, AbortSignal.timeout(5000));
      await node.readNamespace("shop");
    }
    expect(api.requests).toHaveLength(6);
    expect(api.tlsConnections).toBe(1);
  });

  it("keeps an agent per TLS settings: the same settings share one, another CA or server name gets its own", () => {
    const settings = { ca: "ca-1", servername: "api.example" };
    expect(sharedAgent(settings)).toBe(sharedAgent({ ...settings }));
    expect(sharedAgent({ ...settings, ca: "ca-2" })).not.toBe(sharedAgent(settings));
    expect(sharedAgent({ ...settings, servername: "other.example" })).not.toBe(sharedAgent(settings));
  });

  it("asks a GET again on a new connection when a kept-alive one is dropped as it is reused; a write fails as it came", async () => {
    const config = kubeConfigOf(api.writeAgentKubeconfig());
    const node = createNodeApi(config, "n1");
    api.addNamespace({ metadata: { name: "shop" } });
    api.addNode({ metadata: { name: "n1" }, spec: {} });
    api.faults.set("/api/v1/namespaces/shop", { dropReused: true });
    for (let i = 0; i < 3; i++) expect((await node.readNamespace("shop")).metadata?.name).toBe("shop");
    // The first on a new connection, each after it dropped once and asked again on another.
    expect(api.tlsConnections).toBe(3);
    api.faults.set("/api/v1/nodes/n1/status", { dropReused: true });
    const condition = { type: "MeshcniReady", status: "True", reason: "Ready", message: "" };
    await expect(node.setNodeCondition(condition)).rejects.toThrow();
    expect(api.requests.filter((request) => request.path === "/api/v1/nodes/n1/status")).toHaveLength(1);
  });
});
