import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** What the server does for one path instead of answering from its store. */
/**
 * What the server does for one path instead of answering from its store: fail with a
 * status, never answer, answer 200 with this raw body, or answer 200 with an endless body.
 */
export type Fault = { status: number } | { hang: true } | { body: string } | { endless: true };

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  authorized: boolean;
  body: unknown;
  at: number;
}

type KubeObject = {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string; [key: string]: unknown };
  [key: string]: unknown;
};

interface PodWatcher {
  res: ServerResponse;
  nodeName: string | undefined;
}

/** What the server answers: a status code and a JSON body. */
interface Reply {
  code: number;
  body: unknown;
}

/** A Kubernetes Status object for a failed request. */
function failure(code: number, reason: string, message: string): Reply {
  return { code, body: { kind: "Status", apiVersion: "v1", status: "Failure", message, reason, code } };
}

/** RFC 7386 JSON merge patch. */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (typeof patch !== "object" || patch === null || Array.isArray(patch)) return patch;
  const result: Record<string, unknown> =
    typeof target === "object" && target !== null && !Array.isArray(target) ? { ...(target as object) } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

/** RFC 6902 JSON patch, for the ops the agent sends (test, add, replace, remove on object paths). */
function jsonPatch(target: KubeObject, ops: Array<{ op: string; path: string; value?: unknown }>): KubeObject | string {
  const result = structuredClone(target) as Record<string, unknown>;
  for (const { op, path, value } of ops) {
    const keys = path
      .split("/")
      .slice(1)
      .map((key) => key.replace(/~1/g, "/").replace(/~0/g, "~"));
    const last = keys.pop()!;
    let parent: Record<string, unknown> = result;
    for (const key of keys) {
      parent[key] ??= {};
      parent = parent[key] as Record<string, unknown>;
    }
    if (op === "test" && JSON.stringify(parent[last]) !== JSON.stringify(value)) return `test failed at ${path}`;
    if (op === "add" || op === "replace") parent[last] = value;
    if (op === "remove") delete parent[last];
  }
  return result as KubeObject;
}

/**
 * An HTTPS server with the Kubernetes API's shapes for what meshcni uses (pods: get,
 * list and watch by spec.nodeName, merge-patch, delete; namespaces; nodes: get and
 * JSON-patch; events: create), bearer-token auth and a self-signed CA, reached through
 * a real kubeconfig. Tests put objects in it, inject faults per path and read back
 * every request it got.
 */
export class FakeApiServer {
  readonly token = `meshcni-test-${Math.random().toString(36).slice(2)}`;
  readonly pods = new Map<string, KubeObject>();
  readonly namespaces = new Map<string, KubeObject>();
  readonly nodes = new Map<string, KubeObject>();
  /** DaemonSets by `namespace/name`. */
  readonly daemonSets = new Map<string, KubeObject>();
  /** Pods (`namespace/name`) whose eviction a PodDisruptionBudget refuses (429). */
  readonly disruptionBudgetBlocks = new Set<string>();
  readonly events: KubeObject[] = [];
  readonly faults = new Map<string, Fault>();
  readonly requests: RecordedRequest[] = [];
  /** Made by start(), so a suite that never runs leaves nothing behind. */
  dir = "";
  private server: Server | undefined;
  private hanging = new Set<ServerResponse>();
  private watchers = new Set<PodWatcher>();
  private version = 1;
  port = 0;

  async start(): Promise<this> {
    this.dir = mkdtempSync(join(tmpdir(), "meshcni-api-"));
    const key = join(this.dir, "server.key");
    const cert = join(this.dir, "server.crt");
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=meshcni-test-apiserver",
        "-addext",
        "subjectAltName=IP:127.0.0.1,DNS:localhost",
        "-keyout",
        key,
        "-out",
        cert,
      ],
      { stdio: "ignore" },
    );
    this.server = createServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) => {
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk.toString()));
      req.on("end", () => this.handle(req, res, body));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.address() as { port: number }).port;
    return this;
  }

  get caPem(): string {
    return readFileSync(join(this.dir, "server.crt"), "utf8");
  }

  /** Writes a kubeconfig for this server; `token` and `caPem` override the valid ones. */
  writeKubeconfig(path = join(this.dir, "kubeconfig"), token = this.token, caPem = this.caPem): string {
    const ca = Buffer.from(caPem).toString("base64");
    writeFileSync(
      path,
      [
        "apiVersion: v1",
        "kind: Config",
        "clusters:",
        `- name: test\n  cluster:\n    server: https://127.0.0.1:${this.port}\n    certificate-authority-data: ${ca}`,
        "users:",
        `- name: meshcni\n  user:\n    token: ${token}`,
        "contexts:",
        "- name: test\n  context:\n    cluster: test\n    user: meshcni",
        "current-context: test",
        "",
      ].join("\n"),
      { mode: 0o600 },
    );
    return path;
  }

  /** Adds or replaces a pod; pod watchers see ADDED or MODIFIED. */
  addPod(pod: KubeObject): void {
    const { namespace = "default", name = "" } = pod.metadata ?? {};
    const key = `${namespace}/${name}`;
    const existed = this.pods.has(key);
    const stored = this.stamp({ apiVersion: "v1", kind: "Pod", ...pod });
    this.pods.set(key, stored);
    if (!this.namespaces.has(namespace)) this.addNamespace({ metadata: { name: namespace } });
    this.notify(existed ? "MODIFIED" : "ADDED", stored);
  }

  addNamespace(namespace: KubeObject): void {
    this.namespaces.set(namespace.metadata?.name ?? "", { apiVersion: "v1", kind: "Namespace", ...namespace });
  }

  addDaemonSet(namespace: string, name: string): void {
    this.daemonSets.set(
      `${namespace}/${name}`,
      this.stamp({ apiVersion: "apps/v1", kind: "DaemonSet", metadata: { namespace, name, uid: `uid-ds-${name}` } }),
    );
  }

  addNode(node: KubeObject): void {
    this.nodes.set(node.metadata?.name ?? "", this.stamp({ apiVersion: "v1", kind: "Node", ...node }));
  }

  /** The requests of one method whose path matches. */
  requestsTo(method: string, path: RegExp): RecordedRequest[] {
    return this.requests.filter((request) => request.method === method && path.test(request.path));
  }

  async stop(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    for (const watcher of this.watchers) watcher.res.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
  }

  private stamp(object: KubeObject): KubeObject {
    return { ...object, metadata: { ...object.metadata, resourceVersion: String(++this.version) } };
  }

  private notify(type: "ADDED" | "MODIFIED" | "DELETED", pod: KubeObject): void {
    const nodeName = (pod.spec as { nodeName?: string } | undefined)?.nodeName;
    for (const watcher of this.watchers) {
      if (watcher.nodeName === undefined || watcher.nodeName === nodeName) watcher.res.write(`${JSON.stringify({ type, object: pod })}\n`);
    }
  }

  private handle(req: IncomingMessage, res: ServerResponse, rawBody: string): void {
    const url = new URL(req.url ?? "/", "https://localhost");
    const path = url.pathname;
    const query = Object.fromEntries(url.searchParams);
    const authorized = req.headers.authorization === `Bearer ${this.token}`;
    let body: unknown = rawBody;
    try {
      body = rawBody ? JSON.parse(rawBody) : undefined;
    } catch {
      // kept as text
    }
    const method = req.method ?? "";
    this.requests.push({ method, path, query, authorized, body, at: performance.now() });
    const fault = this.faults.get(path);
    if (fault && "hang" in fault) {
      this.hanging.add(res);
      return;
    }
    if (authorized && fault && "body" in fault) {
      res.writeHead(200, { "content-type": "application/json" }).end(fault.body);
      return;
    }
    if (authorized && fault && "endless" in fault) {
      this.endless(res);
      return;
    }
    const reply = !authorized
      ? failure(401, "Unauthorized", "Unauthorized")
      : fault && "status" in fault
        ? failure(fault.status, "InternalError", `injected fault ${fault.status}`)
        : this.route(method, path, query, body, res);
    if (reply) res.writeHead(reply.code, { "content-type": "application/json" }).end(JSON.stringify(reply.body));
  }

  /** A 200 whose body never ends: 1 MiB chunks of a string value, for as long as the client reads. */
  private endless(res: ServerResponse): void {
    const chunk = "a".repeat(1 << 20);
    let sent = 0;
    res.writeHead(200, { "content-type": "application/json" });
    res.write('{"kind":"Pod","padding":"');
    const more = () => {
      while (!res.destroyed && sent < 1 << 30 && res.write(chunk)) sent += chunk.length;
    };
    res.on("drain", more);
    more();
  }

  /** Answers one request from the store; undefined when it took the response over (a watch). */
  private route(method: string, path: string, query: Record<string, string>, body: unknown, res: ServerResponse): Reply | undefined {
    const ok = (object: unknown, code = 200): Reply => ({ code, body: object });
    if (path === "/api/v1/pods" && method === "GET") {
      const nodeName = /(?:^|,)spec\.nodeName=([^,]+)/.exec(query.fieldSelector ?? "")?.[1];
      if (query.watch === "true") {
        // As the API server does: the headers go at once, the events as they come.
        res.writeHead(200, { "content-type": "application/json", "transfer-encoding": "chunked" }).flushHeaders();
        const watcher = { res, nodeName };
        this.watchers.add(watcher);
        res.on("close", () => this.watchers.delete(watcher));
        return undefined;
      }
      const items = [...this.pods.values()].filter(
        (pod) => nodeName === undefined || (pod.spec as { nodeName?: string }).nodeName === nodeName,
      );
      return ok({ apiVersion: "v1", kind: "PodList", metadata: { resourceVersion: String(this.version) }, items });
    }
    const pod = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)$/.exec(path);
    if (pod) {
      const key = `${pod[1]}/${pod[2]}`;
      const found = this.pods.get(key);
      if (!found) return failure(404, "NotFound", `pods "${pod[2]}" not found`);
      if (method === "GET") return ok(found);
      if (method === "PATCH") {
        const patched = this.stamp(mergePatch(found, body) as KubeObject);
        this.pods.set(key, patched);
        this.notify("MODIFIED", patched);
        return ok(patched);
      }
      if (method === "DELETE") {
        const uid = (body as { preconditions?: { uid?: string } } | undefined)?.preconditions?.uid;
        if (uid && uid !== (found.metadata as { uid?: string }).uid) return failure(409, "Conflict", "precondition failed: UID");
        this.pods.delete(key);
        this.notify("DELETED", found);
        return ok(found);
      }
    }
    const eviction = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/eviction$/.exec(path);
    if (eviction && method === "POST") {
      const key = `${eviction[1]}/${eviction[2]}`;
      const found = this.pods.get(key);
      if (!found) return failure(404, "NotFound", `pods "${eviction[2]}" not found`);
      if (this.disruptionBudgetBlocks.has(key))
        return failure(429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.");
      const uid = (body as { deleteOptions?: { preconditions?: { uid?: string } } } | undefined)?.deleteOptions?.preconditions?.uid;
      if (uid && uid !== (found.metadata as { uid?: string }).uid) return failure(409, "Conflict", "precondition failed: UID");
      this.pods.delete(key);
      this.notify("DELETED", found);
      return ok({ kind: "Status", apiVersion: "v1", status: "Success" }, 201);
    }
    const daemonSet = /^\/apis\/apps\/v1\/namespaces\/([^/]+)\/daemonsets\/([^/]+)$/.exec(path);
    if (daemonSet && method === "GET") {
      const found = this.daemonSets.get(`${daemonSet[1]}/${daemonSet[2]}`);
      return found ? ok(found) : failure(404, "NotFound", `daemonsets.apps "${daemonSet[2]}" not found`);
    }
    const events = /^\/api\/v1\/namespaces\/([^/]+)\/events$/.exec(path);
    if (events && method === "POST") {
      const event = this.stamp(mergePatch(body, { metadata: { name: `event-${this.events.length}`, namespace: events[1] } }) as KubeObject);
      this.events.push(event);
      return ok(event, 201);
    }
    const node = /^\/api\/v1\/nodes\/([^/]+)$/.exec(path);
    if (node) {
      const found = this.nodes.get(node[1]!);
      if (!found) return failure(404, "NotFound", `nodes "${node[1]}" not found`);
      if (method === "GET") return ok(found);
      if (method === "PATCH") {
        const patched = jsonPatch(found, body as never);
        if (typeof patched === "string") return failure(422, "Invalid", patched);
        const stored = this.stamp(patched);
        this.nodes.set(node[1]!, stored);
        return ok(stored);
      }
    }
    const namespace = /^\/api\/v1\/namespaces\/([^/]+)$/.exec(path);
    const found = method === "GET" && namespace ? this.namespaces.get(namespace[1]!) : undefined;
    return found ? ok(found) : failure(404, "NotFound", `${path} not found`);
  }
}

/** A pod object as the API returns it; `proxy` adds the linkerd-proxy container. */
export interface PodOptions {
  proxy?: "container" | "native-sidecar" | false;
  init?: boolean;
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
  nodeName?: string;
  podIP?: string;
  /** A controller owning the pod (a ReplicaSet), so deleting it gets it recreated. */
  owned?: boolean;
  /** The DaemonSet owning the pod (the agent's own). */
  daemonSet?: string;
  deleting?: boolean;
}

export function podObject(namespace: string, name: string, options: PodOptions = {}): KubeObject {
  const proxy = { name: "linkerd-proxy", image: "cr.l5d.io/linkerd/proxy:stable" };
  const app = { name: "app", image: "app:1" };
  const initContainers = [
    ...(options.init ? [{ name: "linkerd-init", image: "cr.l5d.io/linkerd/proxy-init:v2" }] : []),
    ...(options.proxy === "native-sidecar" ? [{ ...proxy, restartPolicy: "Always" }] : []),
  ];
  return {
    metadata: {
      namespace,
      name,
      uid: `uid-${namespace}-${name}`,
      annotations: options.annotations ?? {},
      labels: options.labels ?? {},
      ...(options.daemonSet
        ? {
            ownerReferences: [
              { apiVersion: "apps/v1", kind: "DaemonSet", name: options.daemonSet, uid: `uid-ds-${options.daemonSet}`, controller: true },
            ],
          }
        : {}),
      ...(options.owned
        ? { ownerReferences: [{ apiVersion: "apps/v1", kind: "ReplicaSet", name: `${name}-rs`, uid: `uid-rs-${name}`, controller: true }] }
        : {}),
      ...(options.deleting ? { deletionTimestamp: new Date().toISOString() } : {}),
    },
    spec: {
      ...(options.nodeName ? { nodeName: options.nodeName } : {}),
      containers: options.proxy === "container" ? [app, proxy] : [app],
      ...(initContainers.length > 0 ? { initContainers } : {}),
    },
    status: options.podIP ? { phase: "Running", podIP: options.podIP, podIPs: [{ ip: options.podIP }] } : { phase: "Pending" },
  };
}
