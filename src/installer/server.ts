import { createServer, type Server } from "node:http";
import type { InstallerMetrics } from "./metrics.js";
import type { Readiness } from "./readiness.js";

/** /readyz (200 or 503 with the reasons) and /metrics (Prometheus text). */
export async function serveProbes(listen: string, readiness: () => Readiness, metrics: InstallerMetrics): Promise<Server> {
  const at = listen.lastIndexOf(":");
  const host = listen.slice(0, at).replace(/^\[|\]$/g, "") || "0.0.0.0";
  const port = Number(listen.slice(at + 1));
  if (at < 0 || !Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`--listen must be HOST:PORT, not ${JSON.stringify(listen)}`);
  const server = createServer((req, res) => {
    if (req.url === "/readyz") {
      const state = readiness();
      res.writeHead(state.ready ? 200 : 503, { "content-type": "text/plain" }).end(state.ready ? "ok\n" : `${state.reasons.join("\n")}\n`);
    } else if (req.url === "/metrics") {
      void metrics.registry.metrics().then((text) => res.writeHead(200, { "content-type": metrics.registry.contentType }).end(text));
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}
