import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultManifestOptions, type ManifestOptions } from "../../src/manifests/options.js";
import { nodeNameClaim } from "../../src/manifests/policy.js";
import { renderManifests } from "../../src/manifests/render.js";
import { admit } from "./admission.js";
import { authorizationOf, isDiscovery, rbacAuthorizer, withNamePrefix } from "./rbac.js";
import { type KubeObject, status, type WatchFault, WatchHub, type WatchKind } from "./watch-hub.js";

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
  /** Whose token it carried: "admin" (the server's own token), "agent", a minted token's ServiceAccount, or "anonymous". */
  who: string;
  body: unknown;
  at: number;
}

/** A token minted through TokenRequest: for whom, until when (ms since the epoch), and the Node it dies with (its UID). */
interface MintedToken {
  serviceAccount: string;
  expires: number;
  boundNode?: { name: string; uid: string };
}

/** What the server answers: a status code and a JSON body. */
interface Reply {
  code: number;
  body: unknown;
}

/** A Kubernetes Status object for a failed request. */
function failure(code: number, reason: string, message: string, extra: Record<string, unknown> = {}): Reply {
  return { code, body: status(code, reason, message, extra) };
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

/** A strategic merge patch of a Node's status, as the server applies it: conditions merged by type, the rest merged. */
function nodeStatusPatch(node: KubeObject, patch: { status?: { conditions?: Array<{ type: string }> } }): KubeObject {
  const conditions = [
    ...(((node.status as { conditions?: Array<{ type: string }> } | undefined)?.conditions ?? []) as Array<{ type: string }>),
  ];
  for (const condition of patch.status?.conditions ?? []) {
    const at = conditions.findIndex((held) => held.type === condition.type);
    if (at >= 0) conditions[at] = mergePatch(conditions[at], condition) as { type: string };
    else conditions.push(condition);
  }
  const { conditions: _, ...rest } = patch.status ?? {};
  return mergePatch(node, { status: { ...rest, conditions } }) as KubeObject;
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
    // kube-apiserver answers a failed test with a bare 422 Invalid, its generic message and no details.
    if (op === "test" && JSON.stringify(parent[last]) !== JSON.stringify(value))
      return "the server rejected our request due to an error in our request";
    if (op === "add" || op === "replace") parent[last] = value;
    if (op === "remove") delete parent[last];
  }
  return result as KubeObject;
}

/**
 * An HTTPS server with the Kubernetes API's shapes for what meshcni uses (pods: get,
 * list and watch by spec.nodeName, merge-patch, delete; namespaces: get, list, watch;
 * nodes: get and JSON-patch; events: create; ServiceAccount tokens: TokenRequest),
 * bearer-token auth and a self-signed CA, reached through a real kubeconfig. Its own
 * (the admin's) token may do anything; the agent's, and a token it minted until it
 * expires, what the RBAC of `meshcni manifests` grants that ServiceAccount, nothing more.
 * Tests put objects in it, inject faults per path and read back every request it got.
 */
export class FakeApiServer {
  /** The cluster admin's token: any request, no admission (the test's own, and the operator's commands'). */
  readonly token = `meshcni-test-${Math.random().toString(36).slice(2)}`;
  /** The agent's projected ServiceAccount token, as the harness gives it (see agentUser). */
  readonly agentToken = `meshcni-agent-${Math.random().toString(36).slice(2)}`;
  /** Tokens that act as the agent's (its own token, and any a test projects for it). */
  readonly agentTokens = new Set([this.agentToken]);
  readonly pods = new Map<string, KubeObject>();
  readonly namespaces = new Map<string, KubeObject>();
  readonly nodes = new Map<string, KubeObject>();
  /** Services by `namespace/name` (the `kubernetes` one, whose ports control-plane pods skip). */
  readonly services = new Map<string, KubeObject>();
  /** DaemonSets by `namespace/name`. */
  readonly daemonSets = new Map<string, KubeObject>();
  /** Pods (`namespace/name`) whose eviction a PodDisruptionBudget refuses (429 with a DisruptionBudget cause). */
  readonly disruptionBudgetBlocks = new Set<string>();
  /**
   * Pods whose eviction is refused otherwise: "throttled" (API Priority and Fairness: 429
   * with Retry-After, no cause), "several-budgets" (500: more than one PDB matches the pod).
   */
  readonly evictionRefusals = new Map<string, "throttled" | "several-budgets">();
  /** How long a pod deleted with a grace period stays terminating before its kubelet removes it; undefined: until deletePod. */
  terminatingMs: number | undefined = 0;
  private readonly kubeletTimers = new Set<NodeJS.Timeout>();
  /** What watches of a path get instead of events (see WatchFault). */
  readonly watchFaults = new Map<string, WatchFault>();
  /** While set and not past `until` (this.now()), requests whose path matches are answered 429 with Retry-After. */
  throttle: { until: number; retryAfterSeconds: number; path: RegExp; listsOnly?: boolean } | undefined;
  /** Until when (this.now()) a restarted server's authorizer refuses every token (see restart()). */
  private authorizationWarmupUntil = 0;
  /** The watch cache: windows, timeouts, bookmarks. */
  readonly watches = new WatchHub();
  readonly events: KubeObject[] = [];
  readonly faults = new Map<string, Fault>();
  readonly requests: RecordedRequest[] = [];
  /**
   * The RBAC the agent's and every minted token are authorised by: the Roles, ClusterRoles
   * and bindings `meshcni manifests` renders (deploy/'s by default; see authorizeAs).
   */
  private authorize = rbacAuthorizer(rbacObjects(defaultManifestOptions));
  /** Tokens minted through TokenRequest. */
  readonly minted = new Map<string, MintedToken>();
  /** Whether TokenRequest binds tokens to a Node (Kubernetes ≥ 1.33); before, it refuses the kind. */
  nodeBoundTokens = true;
  /**
   * Who the agent's tokens are, as the API server authenticates a projected ServiceAccount
   * token: its username, and the node-name claim of the pod it is bound to (none: a legacy
   * or unbound token).
   */
  agentUser: { username: string; node: string | undefined } = { username: "system:serviceaccount:meshcni:meshcni", node: undefined };
  /** ValidatingAdmissionPolicies and their bindings it enforces on every write (see admit). */
  admissionPolicies: Array<Record<string, unknown>> = [];
  /**
   * Whether discovery lists ValidatingAdmissionPolicies (a 1.30+ server) or not (an older
   * one); unset: whether the test loaded policies (one that loads none models an older server).
   */
  servesAdmissionPolicies: boolean | undefined;
  /** The longest life this server grants a minted token, whatever is asked (a cluster's --service-account-max-token-expiration). */
  maxTokenSeconds = Number.POSITIVE_INFINITY;
  /** The clock token expiry is judged by (ms since the epoch). */
  now: () => number = () => Date.now();
  /** Made by start(), so a suite that never runs leaves nothing behind. */
  dir = "";
  private server: Server | undefined;
  private hanging = new Set<ServerResponse>();
  private version = 1;
  port = 0;

  /**
   * Authorises as the manifests rendered with these options would (an agent run with
   * --repair evict needs evict's RBAC), through a kustomize namePrefix when one is given.
   */
  authorizeAs(options: Partial<ManifestOptions>, namePrefix = ""): this {
    this.authorize = rbacAuthorizer(withNamePrefix(rbacObjects({ ...defaultManifestOptions, ...options }), namePrefix));
    return this;
  }

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

  /** A kubeconfig with the agent's token: its requests authorised by the agent's RBAC and admitted by the policies. */
  writeAgentKubeconfig(): string {
    return this.writeKubeconfig(join(this.dir, "agent-kubeconfig"), this.agentToken);
  }

  /** Writes a kubeconfig for this server (the admin's token); `token` and `caPem` override the valid ones. */
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

  /** Adds or replaces a pod; pod watchers see ADDED or MODIFIED (unless `quietly`: a watch that missed it). */
  addPod(pod: KubeObject, options: { quietly?: boolean } = {}): void {
    const { namespace = "default", name = "" } = pod.metadata ?? {};
    const key = `${namespace}/${name}`;
    const existed = this.pods.has(key);
    if (!this.namespaces.has(namespace)) this.addNamespace({ metadata: { name: namespace } });
    const stored = this.stamp({ apiVersion: "v1", kind: "Pod", ...pod });
    this.pods.set(key, stored);
    if (!options.quietly) this.notify(existed ? "MODIFIED" : "ADDED", stored);
  }

  /**
   * Removes a pod at once, as its kubelet's final delete (or a force delete) does: pod
   * watchers see DELETED, stamped with the deletion's own resourceVersion.
   */
  deletePod(namespace: string, name: string): void {
    const found = this.pods.get(`${namespace}/${name}`);
    if (!found || !this.pods.delete(`${namespace}/${name}`)) return;
    this.notify("DELETED", this.stamp(found));
  }

  /**
   * A DELETE or an eviction, as kube-apiserver carries it out: a pod bound to a node is
   * marked (deletionTimestamp, deletionGracePeriodSeconds: MODIFIED) and stays until its
   * kubelet removes it, here `terminatingMs` later (undefined: until deletePod); an
   * unscheduled pod, or a grace period of 0, goes at once. A pod already terminating is
   * left as it is.
   */
  private deleteGracefully(namespace: string, name: string, gracePeriodSeconds: number | undefined): KubeObject | undefined {
    const found = this.pods.get(`${namespace}/${name}`);
    if (!found || found.metadata?.deletionTimestamp) return found;
    const spec = found.spec as { nodeName?: string; terminationGracePeriodSeconds?: number } | undefined;
    const grace = gracePeriodSeconds ?? spec?.terminationGracePeriodSeconds ?? 30;
    if (!spec?.nodeName || grace === 0) {
      this.deletePod(namespace, name);
      return found;
    }
    const deletionTimestamp = new Date(this.now() + grace * 1000).toISOString().replace(/\.\d+Z$/, "Z");
    const terminating = this.stamp({ ...found, metadata: { ...found.metadata, deletionTimestamp, deletionGracePeriodSeconds: grace } });
    this.pods.set(`${namespace}/${name}`, terminating);
    this.notify("MODIFIED", terminating);
    if (this.terminatingMs !== undefined) {
      const timer = setTimeout(() => {
        this.kubeletTimers.delete(timer);
        this.deletePod(namespace, name);
      }, this.terminatingMs);
      this.kubeletTimers.add(timer);
    }
    return terminating;
  }

  /** Whether a pod is being deleted or gone: a DELETE or an eviction went through. */
  deleting(namespace: string, name: string): boolean {
    return this.pods.get(`${namespace}/${name}`)?.metadata?.deletionTimestamp !== undefined || !this.pods.has(`${namespace}/${name}`);
  }

  /** Adds or replaces a namespace; namespace watchers see ADDED or MODIFIED. */
  addNamespace(namespace: KubeObject): void {
    const name = namespace.metadata?.name ?? "";
    const existed = this.namespaces.has(name);
    const stored = this.stamp({ apiVersion: "v1", kind: "Namespace", ...namespace });
    this.namespaces.set(name, stored);
    this.watches.record({ version: this.version, kind: "Namespace", type: existed ? "MODIFIED" : "ADDED", object: stored });
  }

  /** Deletes a namespace; watchers see DELETED, at the deletion's resourceVersion. */
  deleteNamespace(name: string): void {
    const found = this.namespaces.get(name);
    if (!found || !this.namespaces.delete(name)) return;
    const deleted = this.stamp(found);
    this.watches.record({ version: this.version, kind: "Namespace", type: "DELETED", object: deleted });
  }

  addDaemonSet(namespace: string, name: string): void {
    this.daemonSets.set(
      `${namespace}/${name}`,
      this.stamp({ apiVersion: "apps/v1", kind: "DaemonSet", metadata: { namespace, name, uid: `uid-ds-${name}` } }),
    );
  }

  /** The `kubernetes` Service as a cluster's API server keeps it: port 443 to `targetPort` on the API servers. */
  addKubernetesService(targetPort: number | string): void {
    const existed = this.services.has("default/kubernetes");
    const stored = this.stamp({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "kubernetes", namespace: "default", uid: "uid-svc-kubernetes" },
      spec: { ports: [{ name: "https", port: 443, protocol: "TCP", targetPort }], clusterIP: "10.96.0.1" },
    });
    this.services.set("default/kubernetes", stored);
    this.watches.record({ version: this.version, kind: "Service", type: existed ? "MODIFIED" : "ADDED", object: stored });
  }

  /** Adds (registers) or replaces a node; node watchers see ADDED or MODIFIED. */
  addNode(node: KubeObject): void {
    const name = node.metadata?.name ?? "";
    const existed = this.nodes.has(name);
    // A Node registered anew is a new object: a new UID (what a token bound to the old one names).
    const uid = existed ? this.nodes.get(name)?.metadata?.uid : `uid-node-${name}-${Math.random().toString(36).slice(2, 8)}`;
    const stored = this.stamp({ apiVersion: "v1", kind: "Node", ...node, metadata: { uid, ...node.metadata } });
    this.nodes.set(name, stored);
    this.watches.record({ version: this.version, kind: "Node", type: existed ? "MODIFIED" : "ADDED", object: stored });
  }

  /** Deletes a node (kubelet may register it again); node watchers see DELETED. */
  deleteNode(name: string): void {
    const found = this.nodes.get(name);
    if (!found || !this.nodes.delete(name)) return;
    const deleted = this.stamp(found);
    this.watches.record({ version: this.version, kind: "Node", type: "DELETED", object: deleted });
  }

  /**
   * As a restarted API server: every connection reset, a new watch cache (resumes from
   * before it get 410), and for `authorizationWarmupMs` every token but the admin's
   * refused with 403, as kube-apiserver's RBAC authorizer does until its caches have synced.
   */
  restart(options: { authorizationWarmupMs?: number } = {}): void {
    this.authorizationWarmupUntil = this.now() + (options.authorizationWarmupMs ?? 0);
    for (const res of this.hanging) res.destroy();
    this.hanging.clear();
    this.version++;
    this.watches.restart(this.version);
    this.server?.closeAllConnections();
  }

  /** The requests of one method whose path matches. */
  /** The conditions a Node's status holds (none when the Node is not there). */
  nodeConditions(name: string): Array<Record<string, string>> {
    return ((this.nodes.get(name)?.status ?? {}) as { conditions?: Array<Record<string, string>> }).conditions ?? [];
  }

  requestsTo(method: string, path: RegExp): RecordedRequest[] {
    return this.requests.filter((request) => request.method === method && path.test(request.path));
  }

  async stop(): Promise<void> {
    for (const timer of this.kubeletTimers) clearTimeout(timer);
    for (const res of this.hanging) res.destroy();
    this.watches.destroyAll();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
  }

  private stamp(object: KubeObject): KubeObject {
    return { ...object, metadata: { ...object.metadata, resourceVersion: String(++this.version) } };
  }

  /** Pod watchers see this change, at the version it was stamped with. */
  private notify(type: "ADDED" | "MODIFIED" | "DELETED", pod: KubeObject): void {
    this.watches.record({ version: Number(pod.metadata?.resourceVersion), kind: "Pod", type, object: pod });
  }

  /** Takes a watch request over (undefined: nothing more to answer), with what watchFaults says for its path. */
  private watch(
    kind: WatchKind,
    path: string,
    query: Record<string, string>,
    res: ServerResponse,
    matches: (object: KubeObject) => boolean,
  ): undefined {
    this.watches.open(kind, res, query, matches, () => this.version, this.watchFaults.get(path));
    return undefined;
  }

  /** A list's answer, a page at a time when asked (`limit`, `continue`), as the API server pages. */
  private page(kind: string, items: KubeObject[], query: Record<string, string>): Reply {
    const offset = query.continue ? Number(Buffer.from(query.continue, "base64url").toString()) : 0;
    const limit = Number(query.limit) > 0 ? Number(query.limit) : items.length;
    const rest = items.length - offset - limit;
    const metadata = {
      resourceVersion: String(this.version),
      ...(rest > 0 ? { continue: Buffer.from(String(offset + limit)).toString("base64url"), remainingItemCount: rest } : {}),
    };
    return { code: 200, body: { apiVersion: "v1", kind, metadata, items: items.slice(offset, offset + limit) } };
  }

  private handle(req: IncomingMessage, res: ServerResponse, rawBody: string): void {
    const url = new URL(req.url ?? "/", "https://localhost");
    const path = url.pathname;
    const query = Object.fromEntries(url.searchParams);
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
    const mintedToken = bearer === undefined ? undefined : this.minted.get(bearer);
    const boundNodeAlive = (bound: MintedToken["boundNode"]) => !bound || this.nodes.get(bound.name)?.metadata?.uid === bound.uid;
    const live = mintedToken !== undefined && mintedToken.expires > this.now() && boundNodeAlive(mintedToken.boundNode);
    const who =
      bearer === this.token
        ? "admin"
        : bearer !== undefined && this.agentTokens.has(bearer)
          ? "agent"
          : live
            ? mintedToken.serviceAccount
            : "anonymous";
    const authorized = who !== "anonymous";
    let body: unknown = rawBody;
    try {
      body = rawBody ? JSON.parse(rawBody) : undefined;
    } catch {
      // kept as text
    }
    const method = req.method ?? "";
    // Its own clock, as its answers' Date says it.
    res.setHeader("date", new Date(this.now()).toUTCString());
    this.requests.push({ method, path, query, authorized, who, body, at: performance.now() });
    if (
      this.throttle &&
      this.now() < this.throttle.until &&
      this.throttle.path.test(path) &&
      !(this.throttle.listsOnly && query.watch === "true")
    ) {
      const { retryAfterSeconds } = this.throttle;
      const throttled = failure(429, "TooManyRequests", "Too many requests, please try again later.");
      res
        .writeHead(429, { "content-type": "application/json", "retry-after": String(retryAfterSeconds) })
        .end(JSON.stringify(throttled.body));
      return;
    }
    if (authorized && this.now() < this.authorizationWarmupUntil) {
      const forbidden = failure(403, "Forbidden", `${path} is forbidden: the authorizer's caches have not synced yet`);
      res.writeHead(403, { "content-type": "application/json" }).end(JSON.stringify(forbidden.body));
      return;
    }
    const serviceAccount = who === "agent" ? this.agentServiceAccount() : who;
    if (
      authorized &&
      who !== "admin" &&
      !isDiscovery(method, path) &&
      !this.authorize(serviceAccount, authorizationOf(method, path, query))
    ) {
      const forbidden = failure(403, "Forbidden", `system:serviceaccount:${serviceAccount.replace("/", ":")} cannot ${method} ${path}`);
      res.writeHead(403, { "content-type": "application/json" }).end(JSON.stringify(forbidden.body));
      return;
    }
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
        : this.route(method, path, query, body, res, who, req.headers["content-type"] ?? "");
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

  /** The agent's ServiceAccount (`namespace/name`), from the username its tokens authenticate as. */
  private agentServiceAccount(): string {
    const [, namespace, name] = /^system:serviceaccount:([^:]+):(.+)$/.exec(this.agentUser.username) ?? [];
    return `${namespace}/${name}`;
  }

  /** What the API server's admission says of a write by `who` (the policies run for the agent's requests). */
  private admission(
    who: string,
    operation: "CREATE" | "UPDATE",
    resource: string,
    subResource: string,
    object: KubeObject,
    oldObject: KubeObject | null,
  ): Reply | undefined {
    if (who !== "agent") return undefined;
    const { username, node } = this.agentUser;
    const denied = admit(this.admissionPolicies, {
      userInfo: {
        username,
        groups: ["system:serviceaccounts", "system:authenticated"],
        ...(node ? { extra: { [nodeNameClaim]: [node] } } : {}),
      },
      operation,
      resource: { group: "", version: "v1", resource },
      subResource,
      namespace: String(object.metadata?.namespace ?? ""),
      name: String(object.metadata?.name ?? ""),
      object,
      oldObject,
    });
    return denied ? failure(denied.code, "Invalid", denied.message) : undefined;
  }

  /** Answers one request from the store; undefined when it took the response over (a watch). */
  private route(
    method: string,
    path: string,
    query: Record<string, string>,
    body: unknown,
    res: ServerResponse,
    who: string,
    contentType: string,
  ): Reply | undefined {
    const ok = (object: unknown, code = 200): Reply => ({ code, body: object });
    if (path === "/api/v1/pods" && method === "GET") {
      const nodeName = /(?:^|,)spec\.nodeName=([^,]+)/.exec(query.fieldSelector ?? "")?.[1];
      // Equality selectors only (key=value, comma-separated), as meshcni sends them.
      const labels = (query.labelSelector ?? "")
        .split(",")
        .filter(Boolean)
        .map((term) => term.split("=") as [string, string]);
      const onNode = (pod: KubeObject) =>
        (nodeName === undefined || (pod.spec as { nodeName?: string } | undefined)?.nodeName === nodeName) &&
        labels.every(([key, value]) => (pod.metadata?.labels as Record<string, string> | undefined)?.[key] === value);
      if (query.watch === "true") return this.watch("Pod", path, query, res, onNode);
      return this.page("PodList", [...this.pods.values()].filter(onNode), query);
    }
    if (path === "/api/v1/events" && method === "GET") {
      const fields = Object.fromEntries(
        (query.fieldSelector ?? "")
          .split(",")
          .filter(Boolean)
          .map((term) => term.split("=")),
      );
      const value = (event: KubeObject, field: string): unknown =>
        field.split(".").reduce<unknown>((at, key) => (at as Record<string, unknown> | undefined)?.[key], event);
      return this.page(
        "EventList",
        this.events.filter((event) => Object.entries(fields).every(([field, wanted]) => value(event, field) === wanted)),
        query,
      );
    }
    const pod = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)$/.exec(path);
    if (pod) {
      const key = `${pod[1]}/${pod[2]}`;
      const found = this.pods.get(key);
      if (!found) return failure(404, "NotFound", `pods "${pod[2]}" not found`);
      if (method === "GET") return ok(found);
      if (method === "PATCH") {
        const denied = this.admission(who, "UPDATE", "pods", "", mergePatch(found, body) as KubeObject, found);
        if (denied) return denied;
        const patched = this.stamp(mergePatch(found, body) as KubeObject);
        this.pods.set(key, patched);
        this.notify("MODIFIED", patched);
        return ok(patched);
      }
      if (method === "DELETE") {
        const options = body as { preconditions?: { uid?: string }; gracePeriodSeconds?: number } | undefined;
        const uid = options?.preconditions?.uid;
        if (uid && uid !== (found.metadata as { uid?: string }).uid) return failure(409, "Conflict", "precondition failed: UID");
        return ok(this.deleteGracefully(pod[1]!, pod[2]!, options?.gracePeriodSeconds));
      }
    }
    const eviction = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/eviction$/.exec(path);
    if (eviction && method === "POST") {
      const key = `${eviction[1]}/${eviction[2]}`;
      const found = this.pods.get(key);
      if (!found) return failure(404, "NotFound", `pods "${eviction[2]}" not found`);
      const denied = this.admission(who, "CREATE", "pods", "eviction", body as KubeObject, null);
      if (denied) return denied;
      if (this.disruptionBudgetBlocks.has(key))
        return failure(429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.", {
          details: {
            causes: [{ reason: "DisruptionBudget", message: "The disruption budget guarded-pdb needs 1 healthy pods and has 1 currently" }],
          },
        });
      const refusal = this.evictionRefusals.get(key);
      if (refusal === "several-budgets")
        return failure(
          500,
          "InternalError",
          "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
        );
      if (refusal === "throttled") {
        res.setHeader("retry-after", "2");
        return failure(429, "TooManyRequests", "Too many requests, please try again later.");
      }
      const options = (body as { deleteOptions?: { preconditions?: { uid?: string }; gracePeriodSeconds?: number } } | undefined)
        ?.deleteOptions;
      const uid = options?.preconditions?.uid;
      if (uid && uid !== (found.metadata as { uid?: string }).uid) return failure(409, "Conflict", "precondition failed: UID");
      this.deleteGracefully(eviction[1]!, eviction[2]!, options?.gracePeriodSeconds);
      return ok({ kind: "Status", apiVersion: "v1", status: "Success" }, 201);
    }
    const services = /^\/api\/v1\/namespaces\/([^/]+)\/services$/.exec(path);
    if (services && method === "GET") {
      const name = /(?:^|,)metadata\.name=([^,]+)/.exec(query.fieldSelector ?? "")?.[1];
      const matches = (object: KubeObject) =>
        object.metadata?.namespace === services[1] && (name === undefined || object.metadata?.name === name);
      if (query.watch === "true") return this.watch("Service", path, query, res, matches);
      return this.page("ServiceList", [...this.services.values()].filter(matches), query);
    }
    const service = /^\/api\/v1\/namespaces\/([^/]+)\/services\/([^/]+)$/.exec(path);
    if (service && method === "GET") {
      const found = this.services.get(`${service[1]}/${service[2]}`);
      return found ? ok(found) : failure(404, "NotFound", `services "${service[2]}" not found`);
    }
    if (path === "/apis/admissionregistration.k8s.io/v1" && method === "GET") {
      // Discovery, as a 1.30+ server answers it (ValidatingAdmissionPolicy GA), or an older one.
      const resource = (name: string, kind: string) => ({
        name,
        singularName: "",
        namespaced: false,
        kind,
        verbs: ["get", "list", "watch"],
      });
      const resources = [resource("validatingwebhookconfigurations", "ValidatingWebhookConfiguration")];
      if (this.servesAdmissionPolicies ?? this.admissionPolicies.length > 0)
        resources.push(resource("validatingadmissionpolicies", "ValidatingAdmissionPolicy"));
      return ok({ kind: "APIResourceList", apiVersion: "v1", groupVersion: "admissionregistration.k8s.io/v1", resources });
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
    const node = /^\/api\/v1\/nodes\/([^/]+)(\/status)?$/.exec(path);
    if (node) {
      const [, name = "", status] = node;
      const found = this.nodes.get(name);
      if (!found) return failure(404, "NotFound", `nodes "${name}" not found`);
      if (method === "GET" && !status) return ok(found);
      if (method !== "PATCH") return failure(405, "MethodNotAllowed", `${method} is not supported here`);
      // The node's status takes a strategic merge (conditions by type); the node itself a merge patch (or a JSON patch).
      if (status && !contentType.startsWith("application/strategic-merge-patch+json"))
        return failure(415, "UnsupportedMediaType", "the body of the request was in an unknown format");
      const asJsonPatch = contentType.startsWith("application/json-patch+json");
      // A patch naming metadata.resourceVersion is conditional on it, as in kube-apiserver.
      const expected = asJsonPatch ? undefined : (body as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion;
      if (expected !== undefined && expected !== found.metadata?.resourceVersion)
        return failure(
          409,
          "Conflict",
          `Operation cannot be fulfilled on nodes "${name}": the object has been modified; please apply your changes to the latest version and try again`,
        );
      const patched = status
        ? nodeStatusPatch(found, body as never)
        : asJsonPatch
          ? jsonPatch(found, body as never)
          : (mergePatch(found, body) as KubeObject);
      if (typeof patched === "string") return failure(422, "Invalid", patched);
      const denied = this.admission(who, "UPDATE", "nodes", status ? "status" : "", patched, found);
      if (denied) return denied;
      // A dry run goes through admission and is answered, never stored.
      if (query.dryRun === "All") return ok(patched);
      const stored = this.stamp(patched);
      this.nodes.set(name, stored);
      this.watches.record({ version: this.version, kind: "Node", type: "MODIFIED", object: stored });
      return ok(stored);
    }
    if (path === "/api/v1/namespaces" && method === "GET") {
      if (query.watch === "true") return this.watch("Namespace", path, query, res, () => true);
      return this.page("NamespaceList", [...this.namespaces.values()], query);
    }
    if (path === "/api/v1/nodes" && method === "GET") {
      const name = /(?:^|,)metadata\.name=([^,]+)/.exec(query.fieldSelector ?? "")?.[1];
      const named = (node: KubeObject) => name === undefined || node.metadata?.name === name;
      if (query.watch === "true") return this.watch("Node", path, query, res, named);
      return this.page("NodeList", [...this.nodes.values()].filter(named), query);
    }
    const tokenRequest = /^\/api\/v1\/namespaces\/([^/]+)\/serviceaccounts\/([^/]+)\/token$/.exec(path);
    if (tokenRequest && method === "POST") {
      const spec = (body as { spec?: { expirationSeconds?: number; boundObjectRef?: { kind?: string; name?: string } } } | undefined)?.spec;
      const seconds = spec?.expirationSeconds ?? 3600;
      if (seconds < 600)
        return failure(
          422,
          "Invalid",
          `TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: ${seconds}: may not specify a duration less than 10 minutes`,
        );
      let boundNode: MintedToken["boundNode"];
      const bound = spec?.boundObjectRef;
      if (bound) {
        if (bound.kind !== "Node")
          return failure(
            422,
            "Invalid",
            `spec.boundObjectRef.kind: Unsupported value: "${bound.kind}": supported values: "Pod", "Secret", "Node"`,
          );
        // As kube-apiserver answers where the ServiceAccountTokenNodeBinding gate is off (its default before 1.31).
        if (!this.nodeBoundTokens)
          return failure(
            400,
            "BadRequest",
            'cannot bind token to a Node object as the "ServiceAccountTokenNodeBinding" feature-gate is disabled',
          );
        const node = this.nodes.get(bound.name ?? "");
        if (!node) return failure(404, "NotFound", `nodes "${bound.name}" not found`);
        boundNode = { name: bound.name!, uid: String(node.metadata?.uid) };
      }
      const token = `minted-${this.minted.size + 1}-${Math.random().toString(36).slice(2)}`;
      const expires = this.now() + Math.min(seconds, this.maxTokenSeconds) * 1000;
      this.minted.set(token, { serviceAccount: `${tokenRequest[1]}/${tokenRequest[2]}`, expires, ...(boundNode ? { boundNode } : {}) });
      return ok(
        {
          apiVersion: "authentication.k8s.io/v1",
          kind: "TokenRequest",
          metadata: { name: tokenRequest[2], namespace: tokenRequest[1] },
          spec: { expirationSeconds: seconds },
          status: { token, expirationTimestamp: new Date(expires).toISOString().replace(/\.\d{3}Z$/, "Z") },
        },
        201,
      );
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

/** The RBAC objects of the manifests rendered with these options. */
function rbacObjects(options: ManifestOptions): KubeObject[] {
  return renderManifests(options).filter((object) => /^(Cluster)?Role(Binding)?$/.test(object.kind)) as KubeObject[];
}
