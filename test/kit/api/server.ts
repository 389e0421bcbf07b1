import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { ServerResponse } from "node:http";
import type { Http2SecureServer } from "node:http2";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultManifestOptions, type ManifestOptions } from "../../../src/manifests/options.js";
import { nodeNameClaim } from "../../../src/manifests/policy.js";
import { renderManifests } from "../../../src/manifests/render.js";
import { admit } from "./admission.js";
import { apiListener, type Connections } from "./connections.js";
import { handleRequest, unusedGrants } from "./handle.js";
import { rbacAuthorizer, withNamePrefix } from "./rbac.js";
import { failure, type Reply } from "./replies.js";
import { ApiStore } from "./store.js";
import { selfSignedCertificate } from "./tls.js";
import type { KubeObject } from "./watch-hub.js";

export { type PodOptions, podObject } from "./pods.js";

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
  /** The connection it came on: its protocol and a number per connection ("HTTP/2 #3"). */
  connection: string;
}

/** A token minted through TokenRequest: for whom, until when (ms since the epoch), and the Node it dies with (its UID). */
export interface MintedToken {
  serviceAccount: string;
  expires: number;
  boundNode?: { name: string; uid: string };
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
export class FakeApiServer extends ApiStore {
  /** The cluster admin's token: any request, no admission (the test's own, and the operator's commands'). */
  readonly token = `meshcni-test-${Math.random().toString(36).slice(2)}`;
  /** The agent's projected ServiceAccount token, as the harness gives it (see agentUser). */
  readonly agentToken = `meshcni-agent-${Math.random().toString(36).slice(2)}`;
  /** Tokens that act as the agent's (its own token, and any a test projects for it). */
  readonly agentTokens = new Set([this.agentToken]);
  /** Pods (`namespace/name`) whose eviction a PodDisruptionBudget refuses (429 with a DisruptionBudget cause). */
  readonly disruptionBudgetBlocks = new Set<string>();
  /**
   * Pods whose eviction is refused otherwise: "throttled" (API Priority and Fairness: 429
   * with Retry-After, no cause), "several-budgets" (500: more than one PDB matches the pod).
   */
  readonly evictionRefusals = new Map<string, "throttled" | "several-budgets">();
  /** While set and not past `until` (this.now()), requests whose path matches are answered 429 with Retry-After. */
  throttle: { until: number; retryAfterSeconds: number; path: RegExp; listsOnly?: boolean } | undefined;
  /** Until when (this.now()) a restarted server's authorizer refuses every token (see restart()). */
  authorizationWarmupUntil = 0;
  readonly faults = new Map<string, Fault>();
  readonly requests: RecordedRequest[] = [];
  /** The RBAC objects the agent's and minted tokens are authorised by: deploy/'s by default (see authorizeAs). */
  rbac = rbacObjects(defaultManifestOptions);
  authorize = rbacAuthorizer(this.rbac);
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
  /** Made by start(), so a suite that never runs leaves nothing behind. */
  dir = "";
  private server: Http2SecureServer | undefined;
  private connections: Connections | undefined;
  readonly hanging = new Set<ServerResponse>();
  port = 0;

  /**
   * Authorises as the manifests rendered with these options would (an agent run with
   * --repair evict needs evict's RBAC), through a kustomize namePrefix when one is given.
   */
  authorizeAs(options: Partial<ManifestOptions>, namePrefix = ""): this {
    this.rbac = withNamePrefix(rbacObjects({ ...defaultManifestOptions, ...options }), namePrefix);
    this.authorize = rbacAuthorizer(this.rbac);
    return this;
  }

  /** What `who`'s roles grant that none of `requests` used ("agent": the agent's tokens): what its RBAC could lose. */
  unusedGrants = (who: string, requests: RecordedRequest[] = this.requests) => unusedGrants(this, who, requests);

  async start(): Promise<this> {
    this.dir = mkdtempSync(join(tmpdir(), "meshcni-api-"));
    // The ServiceAccounts of deploy/, as an install leaves them: the agent's and the plugin's.
    for (const name of ["meshcni", "meshcni-plugin"]) this.addServiceAccount("meshcni", name);
    ({ server: this.server, connections: this.connections } = apiListener(selfSignedCertificate(this.dir), (...request) =>
      handleRequest(this, ...request),
    ));
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
    this.connections?.resetAll();
  }

  /** The requests of one method whose path matches. */
  requestsTo(method: string, path: RegExp): RecordedRequest[] {
    return this.requests.filter((request) => request.method === method && path.test(request.path));
  }

  async stop(): Promise<void> {
    for (const timer of this.kubeletTimers) clearTimeout(timer);
    for (const res of this.hanging) res.destroy();
    this.watches.destroyAll();
    this.connections?.resetAll();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
  }

  /** What the API server's admission says of a write by `who` (the policies run for the agent's requests). */
  admission(
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
}

/** The RBAC objects of the manifests rendered with these options. */
function rbacObjects(options: ManifestOptions): KubeObject[] {
  return renderManifests(options).filter((object) => /^(Cluster)?Role(Binding)?$/.test(object.kind)) as KubeObject[];
}
