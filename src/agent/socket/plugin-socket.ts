import { chmodSync, lstatSync, mkdirSync, unlinkSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { dirname } from "node:path";
import { parseAsk } from "../../agent-schema.js";
import { type AgentAnswer, type AgentAsk, maxAskBytes } from "../../agent-socket.js";
import { errnoCode, errorMessage } from "../../errors.js";
import { type Logger, SaidOnce } from "../../log.js";
import type { NetnsId } from "../../netns/enter.js";
import { everyTick } from "../ticks.js";
import { AskLines, HeldBytes } from "./ask-lines.js";
import { type SocketBounds, type SocketCounts, socketBounds } from "./bounds.js";
import type { CallerChecks } from "./peer.js";

/** The plugin's socket, served: closing it ends the connections open on it too. */
export interface PluginServer {
  close(): Promise<void>;
  /**
   * Listens again at the socket's path when something else took its place (another
   * listener's socket, put there through a hostPath): what was there, or undefined when it
   * is still the agent's. Connections open on the old one go on. Done every `reclaimMs` too.
   */
  reclaim(): Promise<string | undefined>;
}

/** A question, and the netns its caller passed with it (none: the agent writes nothing for it). */
export type Answerer = (ask: AgentAsk, netns: NetnsId | undefined) => Promise<AgentAnswer>;

/**
 * Serves the plugin on a unix socket at `path`, in a directory only root may enter (0700),
 * the socket itself 0600, and to root's processes only (`callers.admit`: the kernel's word for who
 * connected, whatever the modes let through). A caller's first bytes are read before the
 * socket reads any (`callers.firstBytes`), to take the netns it passes along. Bounded: connections at once, idle time, a
 * question's length and time to arrive, the bytes held across connections, and questions in
 * flight per connection. A socket left by an earlier agent is replaced; any
 * other file there is refused. Closing it drops the connections still open: a plugin
 * stopped midway (or one waiting for an answer) must not hold the agent's stop; a plugin
 * whose answer is dropped does the work itself.
 */
export async function servePlugin(
  path: string,
  answer: Answerer,
  callers: CallerChecks,
  log: Logger,
  bounds: SocketBounds = socketBounds,
  counts: SocketCounts = { takenBack: () => {}, dropped: () => {} },
): Promise<PluginServer> {
  try {
    if (!lstatSync(path).isSocket()) throw new Error(`${path} exists and is no socket: not replacing it`);
    unlinkSync(path);
  } catch (error) {
    if (errnoCode(error) !== "ENOENT") throw error;
  }
  const connections = new Set<Socket>();
  const held = new HeldBytes(bounds.heldBytes);
  const refused = new SaidOnce();
  // An unexpected failure serving one caller (an errno, an answer that threw) ends its connection, never the agent.
  const failed = (connection: Socket) => (error: unknown) => {
    const reason = `serving it failed: ${errorMessage(error)}`;
    if (refused.first(reason)) log.warn("closed a connection on the plugin's socket", { reason });
    connection.destroy();
  };
  const serve = async (connection: Socket) => {
    const refusal = callers.admit(connection);
    if (refusal) {
      // pid 0: outside the agent's PID namespace.
      if (refused.first(refusal.reason))
        log.warn("refused a caller on the plugin's socket", { reason: refusal.reason, pid: refusal.pid ?? 0 });
      connection.destroy();
      return;
    }
    connections.add(connection);
    connection.once("close", () => connections.delete(connection));
    connection.on("error", () => connection.destroy());
    const first = await callers.firstBytes(connection, bounds.lineMs);
    if ("refused" in first) {
      if (refused.first(first.refused)) log.warn("closed a connection on the plugin's socket", { reason: first.refused });
      return connection.destroy();
    }
    const lines = new AskLines(held, maxAskBytes);
    let lineDeadline: NodeJS.Timeout | undefined;
    connection.once("close", () => {
      clearTimeout(lineDeadline);
      lines.release();
    });
    connection.setTimeout(bounds.idleMs, () => connection.destroy());
    let pending = 0;
    let replies = Promise.resolve();
    const read = (chunk: Buffer) => {
      const started = lines.partial;
      const whole = lines.push(chunk);
      if ("refused" in whole) {
        if (refused.first(whole.refused)) log.warn("closed a connection on the plugin's socket", { reason: whole.refused });
        return connection.destroy();
      }
      if (!lines.partial) clearTimeout(lineDeadline);
      else if (!started || whole.length > 0) {
        clearTimeout(lineDeadline);
        lineDeadline = setTimeout(() => connection.destroy(), bounds.lineMs);
      }
      for (const line of whole) {
        let ask: AgentAsk;
        try {
          ask = parseAsk(line);
        } catch (error) {
          connection.end(`${JSON.stringify({ error: `not a question: ${errorMessage(error)}` })}\n`);
          return;
        }
        if (++pending > bounds.pending) return connection.destroy();
        // In the order asked: a cached answer must not overtake one still waiting on the API.
        replies = replies
          .then(async () => {
            const reply = await answer(ask, first.netns);
            pending--;
            if (connection.writable) connection.write(`${JSON.stringify(reply)}\n`);
          })
          .catch(failed(connection));
      }
    };
    connection.on("data", read);
    if (first.bytes.length > 0) read(first.bytes);
    connection.resume();
  };
  const listen = async () => {
    // Again at each listen: a replaced socket may sit in a directory made again by whoever replaced it.
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    chmodSync(dirname(path), 0o700);
    const listening = createServer({ pauseOnConnect: true }, (connection) => void serve(connection).catch(failed(connection)));
    listening.maxConnections = bounds.connections;
    // Closed by the runtime itself (Node's and Bun's 'drop'), before anything is read: its plugin asks the API.
    listening.on("drop", () => {
      counts.dropped();
      const reason = `${bounds.connections} connections open at once`;
      if (refused.first(reason)) log.warn("closed a connection on the plugin's socket", { reason });
    });
    await new Promise<void>((resolve, reject) => {
      listening.once("error", reject);
      listening.listen(path, () => resolve());
    });
    chmodSync(path, 0o600);
    // Its inode and change time: a file made where it was unlinked may get the same inode number (tmpfs reuses them).
    const { ino, ctimeMs } = lstatSync(path);
    return { listening, ino, ctimeMs };
  };
  let bound = await listen();
  let closed = false;
  const takeBack = async () => {
    if (closed) return undefined;
    const there = (() => {
      try {
        return lstatSync(path);
      } catch (error) {
        if (errnoCode(error) === "ENOENT") return undefined;
        throw error;
      }
    })();
    if (there?.isSocket() && there.ino === bound.ino && there.ctimeMs === bound.ctimeMs) return undefined;
    const what = there === undefined ? "nothing" : there.isSocket() ? "another socket" : "a file that is no socket";
    // The agent's own dir: whatever took the socket's place goes (a directory there is refused, said by the caller).
    if (there) unlinkSync(path);
    // Closed first: closing a unix server unlinks its path (libuv), which is the new one's once it listens.
    bound.listening.close();
    bound = await listen();
    // Closed meanwhile: the listener just made goes too.
    if (closed) bound.listening.close();
    return what;
  };
  // One at a time: the check and a caller must not both take it back.
  let reclaiming: Promise<string | undefined> | undefined;
  const reclaim = () => {
    reclaiming ??= takeBack().finally(() => {
      reclaiming = undefined;
    });
    return reclaiming;
  };
  // An lstat a second: a listener put in its place gets no plugin's question (the plugin proves whom it asks) for long.
  const sayEvery = Math.ceil(bounds.reclaimSaidEveryMs / bounds.reclaimMs);
  const unsaid = { times: 0, found: "", looksSinceSaid: Number.POSITIVE_INFINITY };
  const stopWatching = everyTick(bounds.reclaimMs, () => {
    unsaid.looksSinceSaid++;
    reclaim().then(
      (found) => {
        if (found) {
          counts.takenBack();
          Object.assign(unsaid, { times: unsaid.times + 1, found });
        }
        if (unsaid.times === 0 || unsaid.looksSinceSaid < sayEvery) return;
        log.warn("the plugin's socket was replaced: took it back", { socket: path, found: unsaid.found, times: unsaid.times });
        Object.assign(unsaid, { times: 0, looksSinceSaid: 0 });
      },
      (error: unknown) => log.error("cannot take the plugin's socket back", { socket: path, error: errorMessage(error) }),
    );
  });
  return {
    close: () =>
      new Promise<void>((resolve) => {
        closed = true;
        stopWatching();
        bound.listening.close(() => resolve());
        for (const connection of connections) connection.destroy();
      }),
    reclaim,
  };
}
