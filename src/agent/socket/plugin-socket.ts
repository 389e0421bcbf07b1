import { chmodSync, lstatSync, mkdirSync, unlinkSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { dirname } from "node:path";
import { parseAsk } from "../../agent-schema.js";
import { type AgentAnswer, type AgentAsk, maxLineBytes } from "../../agent-socket.js";
import { errnoCode, errorMessage } from "../../errors.js";
import { type Logger, SaidOnce } from "../../log.js";
import type { PeerCheck } from "./peer.js";

/** The plugin's socket, served: closing it ends the connections open on it too. */
export interface PluginServer {
  close(): Promise<void>;
}

/** What one connection may hold: a plugin asks a few questions in 2 s at most, then goes. */
export const socketBounds = {
  /** Connections at once; more are closed as they come (their plugins ask the API themselves). */
  connections: 256,
  /** A connection that sends nothing and is answered nothing for this long is closed. */
  idleMs: 5000,
  /** Questions asked and not yet answered on one connection. */
  pending: 16,
};

/**
 * Serves the plugin on a unix socket at `path`, in a directory only root may enter (0700),
 * the socket itself 0600, and to root's processes only (`admit`: the kernel's word for who
 * connected, whatever the modes let through). Bounded: connections at once, idle time and
 * questions in flight per connection. A socket left by an earlier agent is replaced; any
 * other file there is refused. Closing it drops the connections still open: a plugin
 * stopped midway (or one waiting for an answer) must not hold the agent's stop; a plugin
 * whose answer is dropped does the work itself.
 */
export async function servePlugin(
  path: string,
  answer: (ask: AgentAsk) => Promise<AgentAnswer>,
  admit: PeerCheck,
  log: Logger,
): Promise<PluginServer> {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  chmodSync(dirname(path), 0o700);
  try {
    if (!lstatSync(path).isSocket()) throw new Error(`${path} exists and is no socket: not replacing it`);
    unlinkSync(path);
  } catch (error) {
    if (errnoCode(error) !== "ENOENT") throw error;
  }
  const connections = new Set<Socket>();
  const refused = new SaidOnce();
  const server = createServer((connection) => {
    const refusal = admit(connection);
    if (refusal) {
      // pid 0: outside the agent's PID namespace.
      if (refused.first(refusal.reason))
        log.warn("refused a caller on the plugin's socket", { reason: refusal.reason, pid: refusal.pid ?? 0 });
      connection.destroy();
      return;
    }
    connections.add(connection);
    connection.once("close", () => connections.delete(connection));
    connection.setTimeout(socketBounds.idleMs, () => connection.destroy());
    let buffered = "";
    let pending = 0;
    let replies = Promise.resolve();
    connection.setEncoding("utf8");
    connection.on("error", () => connection.destroy());
    connection.on("data", (chunk: string) => {
      buffered += chunk;
      if (buffered.length > maxLineBytes) return connection.destroy();
      for (let end = buffered.indexOf("\n"); end >= 0; end = buffered.indexOf("\n")) {
        const line = buffered.slice(0, end);
        buffered = buffered.slice(end + 1);
        let ask: AgentAsk;
        try {
          ask = parseAsk(line);
        } catch (error) {
          connection.end(`${JSON.stringify({ error: `not a question: ${errorMessage(error)}` })}\n`);
          return;
        }
        if (++pending > socketBounds.pending) return connection.destroy();
        // In the order asked: a cached answer must not overtake one still waiting on the API.
        replies = replies.then(async () => {
          const reply = await answer(ask);
          pending--;
          if (connection.writable) connection.write(`${JSON.stringify(reply)}\n`);
        });
      }
    });
  });
  server.maxConnections = socketBounds.connections;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(path, () => resolve());
  });
  chmodSync(path, 0o600);
  return {
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const connection of connections) connection.destroy();
      }),
  };
}
