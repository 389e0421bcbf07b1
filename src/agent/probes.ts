import { createServer, type Server } from "node:http";
import { errorMessage } from "../errors.js";
import type { Installation } from "../installer/install.js";
import { type Readiness, withProblem } from "../installer/readiness.js";
import type { Logger } from "../log.js";
import { serviceAccountToken } from "./credentials.js";
import type { AgentMetrics } from "./metrics.js";

/**
 * Ready only while what the installer put on the host is in place (the binary, the
 * kubeconfig, the entry in the active config), the chain can run, and the agent has its
 * own token. Reads the disk only: `meshcni ready` gives these reasons beside /readyz's verdict.
 */
export function checkReadiness(installation: Installation, serviceAccountDir: string): Readiness {
  const installed = installation.readiness();
  const token = serviceAccountToken(serviceAccountDir);
  if (token.ok || !installation.template.ok) return installed;
  return withProblem(installed, "NoServiceAccountToken", token.problem);
}

/** Says a readiness that changed (reasons included: the probe itself answers only "not ready"), and sets its metrics. */
export function sayReadiness(previous: Readiness, readiness: Readiness, log: Logger, metrics: AgentMetrics): void {
  const reasons = (of: Readiness) => of.reasons.join("\n");
  if (readiness.ready !== previous.ready || (!readiness.ready && reasons(readiness) !== reasons(previous)))
    log.info(readiness.ready ? "ready" : "not ready", readiness.ready ? { active: readiness.active } : { reasons: readiness.reasons });
  metrics.ready.set(readiness.ready ? 1 : 0);
  metrics.chainMissing.reset();
  for (const type of readiness.missingPlugins) metrics.chainMissing.set({ type }, 1);
}

/**
 * Alive while reconciles keep running: one every resync at least, so none for three
 * resyncs (and 30 s) means the loop is stuck and a restart may help. Readiness problems
 * (a broken config, a missing token) are not liveness problems: a restart fixes none.
 */
export function checkLiveness(lastReconcileAt: number, now: number, resyncSeconds: number): { alive: boolean; reason: string } {
  const sinceMs = now - lastReconcileAt;
  const limitMs = Math.max(3 * resyncSeconds * 1000, 30_000);
  return sinceMs <= limitMs
    ? { alive: true, reason: "ok" }
    : { alive: false, reason: `no reconcile for ${Math.round(sinceMs / 1000)} s (limit ${limitMs / 1000} s)` };
}

/** What the agent answers: /readyz (its work is in place), /healthz (its loop runs), /metrics. */
export interface ProbeSources {
  readiness(): Readiness;
  liveness(): { alive: boolean; reason: string };
  metrics: AgentMetrics;
}

/**
 * /readyz (200 "ok", or 503 "not ready: " and the cause's word, e.g. ChainBroken),
 * /healthz (200, or 503 with why the loop looks stuck) and /metrics (Prometheus text). The
 * port is on the host network, reachable by any pod: readiness reasons name host paths, so
 * they go to the log and `meshcni ready` only.
 */
export async function serveProbes({ host, port }: { host: string; port: number }, sources: ProbeSources, log: Logger): Promise<Server> {
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://agent").pathname;
    if (path === "/readyz") {
      const state = sources.readiness();
      res
        .writeHead(state.ready ? 200 : 503, { "content-type": "text/plain" })
        .end(state.ready ? "ok\n" : `not ready: ${state.cause ?? "NotReady"}\n`);
    } else if (path === "/healthz") {
      const { alive, reason } = sources.liveness();
      res.writeHead(alive ? 200 : 503, { "content-type": "text/plain" }).end(`${reason}\n`);
    } else if (path === "/metrics") {
      const { registry } = sources.metrics;
      registry.metrics().then(
        (text) => res.writeHead(200, { "content-type": registry.contentType }).end(text),
        (error: unknown) => res.writeHead(500, { "content-type": "text/plain" }).end(`${String(error)}\n`),
      );
    } else {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found: /readyz, /healthz and /metrics are served\n");
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    // No host: Node's default, every IPv6 address and IPv4's too where the host has IPv6.
    if (host === "") server.listen(port, () => resolve());
    else server.listen(port, host, () => resolve());
  }).catch((error: unknown) => {
    throw new Error(`cannot listen on ${host.includes(":") ? `[${host}]` : host}:${port} (--listen): ${errorMessage(error)}`);
  });
  const address = server.address();
  log.info("serving /readyz, /healthz and /metrics", {
    address: typeof address === "object" && address ? `${address.address}:${address.port}` : address,
  });
  return server;
}
