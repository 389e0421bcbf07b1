import { afterEach, beforeEach } from "vitest";
import { Reflector } from "../../../src/kube/reflector.js";
import { apiSource } from "../../../src/kube/sources.js";
import type { WatchEnd } from "../../../src/kube/watch-ends.js";
import { FakeApiServer } from "../api/server.js";
import { kubeConfigOf } from "../common.js";
import { type LogEntry, memoryLogger } from "../memory-logger.js";

export interface Namespace {
  metadata: { name: string; resourceVersion?: string; annotations?: Record<string, string> };
}

/**
 * A namespaces reflector against a fresh in-test API server for each test (its hooks
 * registered in the calling suite): the server, the reflector's log lines and watch ends,
 * its watches and lists, and `start` with the back-off and watch timeout a test asks for.
 */
export function reflectorScene() {
  const scene = {
    api: undefined as unknown as FakeApiServer,
    logs: [] as LogEntry[],
    ends: [] as WatchEnd[],
    reflector: undefined as Reflector<Namespace> | undefined,
    watches: () => scene.api.requests.filter((request) => request.path === "/api/v1/namespaces" && request.query.watch === "true"),
    lists: () => scene.api.requests.filter((request) => request.path === "/api/v1/namespaces" && request.query.watch === undefined),
    /** `bookmarks`: the record the reflectors of one server share (another's watch may have seen one). */
    start(backoffMs = { first: 200, cap: 2000 }, watchTimeoutSeconds = 1, bookmarks?: { seen: boolean }) {
      // The admin's: the agent lists and watches no namespace (its RBAC gets one by name); the reflector is the subject here.
      const config = kubeConfigOf(scene.api.writeKubeconfig());
      scene.reflector = new Reflector<Namespace>(
        apiSource<Namespace>({
          name: "namespaces",
          config: () => config,
          path: "/api/v1/namespaces",
          query: {},
          // Keeps the name, the version and one annotation: nothing else reaches the store.
          transform: (object) => {
            const { name, resourceVersion, annotations } = (object as Namespace).metadata;
            const kept = annotations?.kept;
            return { metadata: { name, ...(resourceVersion ? { resourceVersion } : {}), ...(kept ? { annotations: { kept } } : {}) } };
          },
          key: (namespace) => namespace.metadata.name,
        }),
        { watchTimeoutSeconds, backoffMs, now: () => performance.now(), random: () => 0, ...(bookmarks ? { bookmarks } : {}) },
        memoryLogger(scene.logs),
        { ended: (end) => void scene.ends.push(end) },
      );
      scene.reflector.start();
      return scene.reflector;
    },
    annotation: (name: string) => scene.reflector!.get(name)?.metadata.annotations?.kept,
  };
  beforeEach(async () => {
    scene.api = await new FakeApiServer().start();
    scene.api.watches.bookmarkIntervalMs = 300;
    scene.logs = [];
    scene.ends = [];
  });
  afterEach(async () => {
    await scene.reflector?.stop();
    scene.reflector = undefined;
    await scene.api.stop();
  });
  return scene;
}
