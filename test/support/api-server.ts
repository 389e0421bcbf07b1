import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** What the server does for one path instead of answering from its store. */
export type Fault = { status: number } | { hang: true };

export interface RecordedRequest {
  method: string;
  path: string;
  authorized: boolean;
}

type KubeObject = { metadata?: { name?: string; namespace?: string; [key: string]: unknown }; [key: string]: unknown };

/**
 * An HTTPS server with the Kubernetes API's shapes for what meshcni reads, bearer-token
 * auth and a self-signed CA, reached through a real kubeconfig. Tests put objects in
 * it, inject faults per path and read back the requests it got.
 */
export class FakeApiServer {
  readonly token = `meshcni-test-${Math.random().toString(36).slice(2)}`;
  readonly pods = new Map<string, KubeObject>();
  readonly namespaces = new Map<string, KubeObject>();
  readonly faults = new Map<string, Fault>();
  readonly requests: RecordedRequest[] = [];
  readonly dir = mkdtempSync(join(tmpdir(), "meshcni-api-"));
  private server: Server | undefined;
  private hanging = new Set<ServerResponse>();
  port = 0;

  async start(): Promise<this> {
    const key = join(this.dir, "server.key");
    const cert = join(this.dir, "server.crt");
    execFileSync("openssl", [
      "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
      "-subj", "/CN=meshcni-test-apiserver", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
      "-keyout", key, "-out", cert,
    ], { stdio: "ignore" });
    this.server = createServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) => this.handle(req, res));
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

  addPod(pod: KubeObject): void {
    const { namespace = "default", name = "" } = pod.metadata ?? {};
    this.pods.set(`${namespace}/${name}`, { apiVersion: "v1", kind: "Pod", ...pod });
    if (!this.namespaces.has(namespace)) this.addNamespace({ metadata: { name: namespace } });
  }

  addNamespace(namespace: KubeObject): void {
    this.namespaces.set(namespace.metadata?.name ?? "", { apiVersion: "v1", kind: "Namespace", ...namespace });
  }

  async stop(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    rmSync(this.dir, { recursive: true, force: true });
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const path = new URL(req.url ?? "/", "https://localhost").pathname;
    const authorized = req.headers.authorization === `Bearer ${this.token}`;
    this.requests.push({ method: req.method ?? "", path, authorized });
    const fault = this.faults.get(path);
    if (fault && "hang" in fault) {
      this.hanging.add(res);
      return;
    }
    if (!authorized) return this.status(res, 401, "Unauthorized", "Unauthorized");
    if (fault) return this.status(res, fault.status, "InternalError", `injected fault ${fault.status}`);
    const pod = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)$/.exec(path);
    const namespace = /^\/api\/v1\/namespaces\/([^/]+)$/.exec(path);
    const found = req.method !== "GET"
      ? undefined
      : pod ? this.pods.get(`${pod[1]}/${pod[2]}`) : namespace ? this.namespaces.get(namespace[1]!) : undefined;
    if (!found) return this.status(res, 404, "NotFound", `${path} not found`);
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(found));
  }

  private status(res: ServerResponse, code: number, reason: string, message: string): void {
    res
      .writeHead(code, { "content-type": "application/json" })
      .end(JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", message, reason, code }));
  }
}

/** A pod object as the API returns it; `proxy` adds the linkerd-proxy container. */
export function podObject(
  namespace: string,
  name: string,
  options: { proxy?: "container" | "native-sidecar" | false; init?: boolean; annotations?: Record<string, string>; labels?: Record<string, string> } = {},
): KubeObject {
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
    },
    spec: {
      containers: options.proxy === "container" ? [app, proxy] : [app],
      ...(initContainers.length > 0 ? { initContainers } : {}),
    },
    status: { phase: "Pending" },
  };
}
