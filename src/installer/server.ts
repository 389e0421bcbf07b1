import { createServer, type Server } from "node:http";
import type { InstallerMetrics } from "./metrics.js";
import type { Readiness } from "./readiness.js";

/** What the agent answers: /readyz (its work is in place), /healthz (its loop runs), /metrics. */
export interface ProbeSources {
  readiness(): Readiness;
  liveness(): { alive: boolean; reason: string };
  metrics: InstallerMetrics;
}

/** /readyz and /healthz (200, or 503 with the reasons) and /metrics (Prometheus text). */
export async function serveProbes({ host, port }: { host: string; port: number }, sources: ProbeSources): Promise<Server> {
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://agent").pathname;
    if (path === "/readyz") {
      const state = sources.readiness();
      res.writeHead(state.ready ? 200 : 503, { "content-type": "text/plain" }).end(state.ready ? "ok\n" : `${state.reasons.join("\n")}\n`);
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
  });
  return server;
}
