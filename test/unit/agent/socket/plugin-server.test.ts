import { mkdtempSync, rmSync, statSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { V1Namespace, V1Pod, V1Service } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { DeletedPods, NodeCache } from "../../../../src/agent/socket/node-cache.js";
import { answerAsk } from "../../../../src/agent/socket/plugin-server.js";
import { servePlugin } from "../../../../src/agent/socket/plugin-socket.js";
import type { AgentAnswer, AgentAsk } from "../../../../src/agent-socket.js";
import { createLogger } from "../../../../src/log.js";
import { podName } from "../../../../src/pod-key.js";
import { anyCaller } from "../../../kit/agent/socket.js";
import { podObject } from "../../../kit/api/server.js";
import { memoryLogger } from "../../../kit/memory-logger.js";

/** The plugin's socket served to anyone. */
const serve = (path: string, answer: (ask: AgentAsk) => Promise<AgentAnswer>) =>
  servePlugin(path, answer, anyCaller(), createLogger({ level: "error" }));

describe("the agent's answers to the plugin", () => {
  const log = memoryLogger([]);
  const cached = podObject("shop", "web", {
    proxy: "container",
    annotations: { "config.linkerd.io/skip-outbound-ports": "5432" },
  }) as V1Pod;
  const fresh = {
    ...podObject("shop", "web", { proxy: "container", nodeName: "n1" }),
    metadata: { ...podObject("shop", "web").metadata, uid: "uid-new" },
  } as V1Pod;
  const asked: string[] = [];
  const api = {
    node: "n1",
    readPod: async (namespace: string, name: string) => {
      asked.push(`pod ${namespace}/${name}`);
      if (name === "gone") throw Object.assign(new Error("not found"), { code: 404 });
      return fresh;
    },
    readNamespace: async (name: string) => {
      asked.push(`namespace ${name}`);
      return {
        metadata: {
          name,
          annotations: { "config.linkerd.io/skip-subnets": "10.0.0.0/8", "kubectl.kubernetes.io/last-applied-configuration": "{}" },
        },
      } as V1Namespace;
    },
    readService: async (namespace: string, name: string) => {
      asked.push(`service ${namespace}/${name}`);
      return {
        metadata: { name, namespace, resourceVersion: "7" },
        spec: { ports: [{ port: 443, targetPort: 6443, name: "https" }] },
      } as V1Service;
    },
  };

  /** A cache over stores holding these pods and namespaces, fresh or not. */
  const cacheOf = (pods: V1Pod[], namespaces: V1Namespace[] = [], fresh = true) => {
    const store = <T>(entries: Array<[string, T]>) => ({ get: (key: string) => new Map(entries).get(key), fresh: () => fresh });
    return new NodeCache(
      store(pods.map((pod) => [podName(pod), pod])),
      store(namespaces.map((namespace) => [namespace.metadata?.name ?? "", namespace])),
    );
  };

  it("answers the kubernetes Service's ports (only them) through the API: control-plane pods are few, nothing watches it", async () => {
    const answer = await answerAsk({ get: "service", namespace: "default", name: "kubernetes" }, cacheOf([]), api, log);
    expect(answer).toEqual({
      object: {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "kubernetes", namespace: "default" },
        spec: { ports: [{ port: 443, targetPort: 6443 }] },
      },
      cached: false,
    });
    expect(asked).toContain("service default/kubernetes");
  });

  it("answers the kubernetes Service from its watch while fresh, asking the API nothing", async () => {
    const service = {
      metadata: { name: "kubernetes", namespace: "default" },
      spec: { ports: [{ port: 443, targetPort: 8443 }] },
    } as V1Service;
    const store = { get: (key: string) => (key === "default/kubernetes" ? service : undefined), fresh: () => true };
    const none = { get: () => undefined, fresh: () => true };
    const cache = new NodeCache(none, none, store);
    asked.length = 0;
    expect(await answerAsk({ get: "service", namespace: "default", name: "kubernetes" }, cache, api, log)).toMatchObject({
      object: { spec: { ports: [{ port: 443, targetPort: 8443 }] } },
      cached: true,
    });
    expect(asked).toEqual([]);
  });

  it("answers from the cache with only what the decision reads, asking the API nothing", async () => {
    const cache = cacheOf([{ ...cached, status: { phase: "Running", podIP: "10.0.0.1" } } as V1Pod]);
    asked.length = 0;
    const answer = await answerAsk({ get: "pod", namespace: "shop", name: "web", uid: "uid-shop-web" }, cache, api, log);
    expect(answer).toEqual({
      object: {
        apiVersion: "v1",
        kind: "Pod",
        metadata: {
          name: "web",
          namespace: "shop",
          uid: "uid-shop-web",
          labels: {},
          annotations: { "config.linkerd.io/skip-outbound-ports": "5432" },
        },
        spec: { containers: [{ name: "app" }, { name: "linkerd-proxy" }] },
      },
      cached: true,
    });
    expect(asked).toEqual([]);
  });

  it("asks the API when the cache has another pod of that name (recreated), none, or no UID to check, and for a namespace it has not seen", async () => {
    const cache = cacheOf([cached]);
    asked.length = 0;
    const recreated = await answerAsk({ get: "pod", namespace: "shop", name: "web", uid: "uid-new" }, cache, api, log);
    expect(recreated).toMatchObject({ object: { metadata: { uid: "uid-new" } }, cached: false });
    expect(await answerAsk({ get: "namespace", name: "shop" }, cache, api, log)).toMatchObject({
      // Only what the decision reads: Linkerd's annotations.
      object: { kind: "Namespace", metadata: { name: "shop", annotations: { "config.linkerd.io/skip-subnets": "10.0.0.0/8" } } },
      cached: false,
    });
    expect(asked).toEqual(["pod shop/web", "namespace shop"]);
    // Without the runtime's UID the cache cannot vouch for the pod: the API is asked.
    asked.length = 0;
    expect(await answerAsk({ get: "pod", namespace: "shop", name: "web" }, cache, api, log)).toMatchObject({ cached: false });
    expect(asked).toEqual(["pod shop/web"]);
    // The API's 404 is an answer, not a failure: the plugin fails on it without asking the API again.
    expect(await answerAsk({ get: "pod", namespace: "shop", name: "gone" }, cache, api, log)).toEqual({
      gone: "the API server has no such pod (404 Not Found)",
    });
  });

  it("answers a pod its watch saw deleted (that very UID) as gone, without the API; another UID of that name is asked for", async () => {
    const deleted = new DeletedPods();
    deleted.note("uid-old");
    const store = { get: () => undefined, fresh: () => true };
    const cache = new NodeCache(store, store, undefined, deleted);
    asked.length = 0;
    expect(await answerAsk({ get: "pod", namespace: "shop", name: "web", uid: "uid-old" }, cache, api, log)).toEqual({
      gone: "its UID uid-old was deleted (the agent's watch saw it go)",
    });
    expect(asked).toEqual([]);
    expect(await answerAsk({ get: "pod", namespace: "shop", name: "web", uid: "uid-new" }, cache, api, log)).toMatchObject({
      cached: false,
    });
    expect(asked).toEqual(["pod shop/web"]);
  });

  it("keeps the most recent deleted UIDs, the oldest forgotten first", () => {
    const deleted = new DeletedPods();
    for (let i = 0; i <= 4096; i++) deleted.note(`uid-${i}`);
    expect(deleted.has("uid-0")).toBe(false);
    expect(deleted.has("uid-1")).toBe(true);
    expect(deleted.has("uid-4096")).toBe(true);
  });

  it("answers nothing about a pod of another node, or of none, that it read from the API: its socket is its node's", async () => {
    const elsewhere = (nodeName?: string) => ({
      ...api,
      readPod: async () => podObject("shop", "web", { proxy: "container", ...(nodeName ? { nodeName } : {}) }) as V1Pod,
    });
    expect(await answerAsk({ get: "pod", namespace: "shop", name: "web" }, cacheOf([]), elsewhere("n2"), log)).toEqual({
      error: "pod shop/web is on node n2, not n1: the agent answers about its node's pods alone",
    });
    expect(await answerAsk({ get: "pod", namespace: "shop", name: "web" }, cacheOf([]), elsewhere(), log)).toEqual({
      error: "pod shop/web is on no node, not n1: the agent answers about its node's pods alone",
    });
  });

  it("answers nothing from a cache that is not fresh (its watch down or silent): the API is asked", async () => {
    const cache = cacheOf([cached], [{ metadata: { name: "shop" } }], false);
    asked.length = 0;
    expect(await answerAsk({ get: "pod", namespace: "shop", name: "web", uid: "uid-shop-web" }, cache, api, log)).toMatchObject({
      cached: false,
    });
    expect(await answerAsk({ get: "namespace", name: "shop" }, cache, api, log)).toMatchObject({ cached: false });
    expect(asked).toEqual(["pod shop/web", "namespace shop"]);
  });

  it("answers on its socket in the order asked, a slow answer before a fast one", async () => {
    const dir = mkdtempSync(join(tmpdir(), "meshcni-socket-"));
    const path = join(dir, "agent", "plugin.sock");
    const server = await serve(path, async (ask) => {
      if (ask.get === "pod") await new Promise((resolve) => setTimeout(resolve, 50));
      return { object: ask.get, cached: ask.get === "namespace" };
    });
    try {
      expect(statSync(path).mode & 0o777).toBe(0o600);
      const lines = await new Promise<string[]>((resolve, reject) => {
        const client = connect(path);
        let text = "";
        client.on("error", reject);
        client.on("data", (chunk) => {
          text += chunk;
          if (text.split("\n").length > 2) {
            client.destroy();
            resolve(text.trim().split("\n"));
          }
        });
        client.write('{"get":"pod","namespace":"shop","name":"web"}\n{"get":"namespace","name":"shop"}\n');
      });
      expect(lines.map((line) => (JSON.parse(line) as { object: string }).object)).toEqual(["pod", "namespace"]);
    } finally {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
