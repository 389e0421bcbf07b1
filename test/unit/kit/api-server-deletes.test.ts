import { request } from "node:https";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeApiServer, podObject } from "../../kit/api/server.js";

type Event = { type: string; object: { metadata: { name: string; resourceVersion: string; deletionTimestamp?: string } } };

/** One request as the admin, over the real transport: a watch's first `events`, or the answer's body. */
function call(api: FakeApiServer, method: string, path: string, events = 0): Promise<Event[] | Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: "127.0.0.1", port: api.port, method, path, ca: api.caPem, headers: { authorization: `Bearer ${api.token}` } },
      (res) => {
        let text = "";
        const seen: Event[] = [];
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
          if (events === 0) return;
          const lines = text.split("\n");
          text = lines.pop()!;
          seen.push(...lines.map((line) => JSON.parse(line) as Event));
          if (seen.length >= events) {
            req.destroy();
            resolve(seen.slice(0, events));
          }
        });
        res.on("end", () => resolve(events === 0 ? (JSON.parse(text) as Record<string, unknown>) : seen));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

const version = (event: Event) => Number(event.object.metadata.resourceVersion);

/**
 * Deletes as kube-apiserver does them, which the agent's watches and sweeps rely on: a
 * pod bound to a node is first marked (MODIFIED with deletionTimestamp), then removed by
 * its kubelet (DELETED); every step, the delete's own included, at a new resourceVersion.
 */
describe("the in-test API server's deletes", () => {
  let api: FakeApiServer;
  beforeAll(async () => {
    api = await new FakeApiServer().start();
  });
  afterAll(() => api.stop());

  it("deletes a scheduled pod gracefully: MODIFIED with its deletionTimestamp, then DELETED, each at a newer version", async () => {
    api.addPod(podObject("shop", "web", { nodeName: "n1" }));
    const from = Number(api.pods.get("shop/web")!.metadata!.resourceVersion);
    const watch = call(api, "GET", `/api/v1/pods?watch=true&resourceVersion=${from}`, 2) as Promise<Event[]>;
    const answer = (await call(api, "DELETE", "/api/v1/namespaces/shop/pods/web")) as { metadata: { deletionTimestamp?: string } };
    expect(answer.metadata.deletionTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const [marked, deleted] = await watch;
    expect(marked).toMatchObject({
      type: "MODIFIED",
      object: { metadata: { deletionTimestamp: expect.any(String), deletionGracePeriodSeconds: 30 } },
    });
    expect(deleted!.type).toBe("DELETED");
    expect(version(marked!)).toBeGreaterThan(from);
    expect(version(deleted!)).toBeGreaterThan(version(marked!));
    expect(api.pods.has("shop/web")).toBe(false);
  });

  it("deletes an unscheduled pod, a namespace and a node at once, each DELETED at a version of its own", async () => {
    api.addPod(podObject("shop", "pending"));
    api.addNode({ metadata: { name: "n9" } });
    api.addNamespace({ metadata: { name: "gone" } });
    const from = Number(api.namespaces.get("gone")!.metadata!.resourceVersion);
    const pods = call(api, "GET", `/api/v1/pods?watch=true&resourceVersion=${from}`, 1) as Promise<Event[]>;
    const nodes = call(api, "GET", `/api/v1/nodes?watch=true&resourceVersion=${from}`, 1) as Promise<Event[]>;
    const namespaces = call(api, "GET", `/api/v1/namespaces?watch=true&resourceVersion=${from}`, 1) as Promise<Event[]>;
    await call(api, "DELETE", "/api/v1/namespaces/shop/pods/pending");
    api.deleteNode("n9");
    api.deleteNamespace("gone");
    const events = [...(await pods), ...(await nodes), ...(await namespaces)];
    expect(events.map((event) => `${event.type} ${event.object.metadata.name}`)).toEqual(["DELETED pending", "DELETED n9", "DELETED gone"]);
    expect(events.map(version)).toEqual([from + 1, from + 2, from + 3]);
  });
});
