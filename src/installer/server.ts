import { createServer, type Server } from "node:http";
import type { InstallerMetrics } from "./metrics.js";
import type { Readiness } from "./readiness.js";

/** /readyz (200 or 503 with the reasons) and /metrics (Prometheus text). */
export async function serveProbes(
  { host, port }: { host: string; port: number },
  readiness: () => Readiness,
  metrics: InstallerMetrics,
): Promise<Server> {
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
