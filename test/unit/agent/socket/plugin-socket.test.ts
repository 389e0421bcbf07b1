import { mkdtempSync, rmSync, statSync, unlinkSync } from "node:fs";
import { connect, createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { socketBounds } from "../../../../src/agent/socket/bounds.js";
import { type PluginServer, servePlugin } from "../../../../src/agent/socket/plugin-socket.js";
import { maxAskBytes } from "../../../../src/agent-socket.js";
import { connectAgent } from "../../../../src/kube/agent-connection.js";
import { anyCaller, nodeConnector } from "../../../kit/agent/socket.js";
import { type LogEntry, memoryLogger } from "../../../kit/memory-logger.js";

const question = '{"get":"namespace","name":"shop"}\n';

/** A client on the socket: what it was answered, and when the agent closed it (ms after connecting). */
function client(path: string) {
  const socket: Socket = connect(path);
  const opened = performance.now();
  let text = "";
  const closed = new Promise<number>((resolve) => socket.on("close", () => resolve(performance.now() - opened)));
  socket.on("data", (chunk) => {
    text += chunk;
  });
  socket.on("error", () => {});
  return {
    socket,
    closed,
    answers: () => text.split("\n").filter(Boolean),
    ready: new Promise((resolve) => socket.on("connect", resolve)),
  };
}

const waitFor = async (check: () => boolean) => {
  for (let tries = 0; tries < 200 && !check(); tries++) await new Promise((resolve) => setTimeout(resolve, 10));
};

/** The bounds of issue 41's connection attack: what one caller, and a crowd of them, can make the agent hold. */
describe("the plugin's socket, bounded", () => {
  let dir: string;
  let path: string;
  let server: PluginServer;
  let lines: LogEntry[];
  const serve = async (bounds: Partial<typeof socketBounds>) => {
    server = await servePlugin(path, async (ask) => ({ object: ask.get, cached: true }), anyCaller(), memoryLogger(lines), {
      ...socketBounds,
      ...bounds,
    });
  };
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "meshcni-socket-"));
    path = join(dir, "plugin.sock");
    lines = [];
  });
  afterEach(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("closes a connection whose question passes maxAskBytes, saying why once; the next caller is answered", async () => {
    await serve({});
    const long = client(path);
    long.socket.write(`{"get":"namespace","name":"${"x".repeat(maxAskBytes)}"}\n`);
    await long.closed;
    expect(long.answers()).toEqual([]);
    const next = client(path);
    next.socket.write(question);
    await waitFor(() => next.answers().length === 1);
    expect(next.answers()).toEqual(['{"object":"namespace","cached":true}']);
    next.socket.destroy();
    expect(lines).toEqual([
      {
        level: "warn",
        message: "closed a connection on the plugin's socket",
        fields: { reason: `a question longer than ${maxAskBytes} bytes` },
      },
    ]);
  });

  it("closes the connections past `connections` as they come, counting each and saying it once; those held are answered", async () => {
    let dropped = 0;
    server = await servePlugin(
      path,
      async (ask) => ({ object: ask.get, cached: true }),
      anyCaller(),
      memoryLogger(lines),
      { ...socketBounds, connections: 2 },
      { takenBack: () => {}, dropped: () => dropped++ },
    );
    const held = [client(path), client(path)];
    await Promise.all(held.map((one) => one.ready));
    const past = [client(path), client(path), client(path)];
    for (const one of past) one.socket.write(question);
    await Promise.all(past.map((one) => one.closed));
    expect(past.map((one) => one.answers())).toEqual([[], [], []]);
    expect(dropped).toBe(3);
    expect(lines).toEqual([
      { level: "warn", message: "closed a connection on the plugin's socket", fields: { reason: "2 connections open at once" } },
    ]);
    for (const one of held) one.socket.write(question);
    await waitFor(() => held.every((one) => one.answers().length === 1));
    expect(held.map((one) => one.answers())).toEqual([['{"object":"namespace","cached":true}'], ['{"object":"namespace","cached":true}']]);
    for (const one of held) one.socket.destroy();
  });

  it("closes a connection with more than `pending` questions unanswered", async () => {
    let release = () => {};
    const answered = new Promise<void>((resolve) => {
      release = resolve;
    });
    server = await servePlugin(
      path,
      async (ask) => {
        await answered;
        return { object: ask.get, cached: true };
      },
      anyCaller(),
      memoryLogger(lines),
      { ...socketBounds, pending: 2 },
    );
    const within = client(path);
    within.socket.write(question.repeat(2));
    const past = client(path);
    past.socket.write(question.repeat(3));
    await past.closed;
    release();
    await waitFor(() => within.answers().length === 2);
    expect(within.answers()).toHaveLength(2);
    expect(past.answers()).toEqual([]);
    within.socket.destroy();
  });

  it("closes a connection whose question is not whole within lineMs, however steadily its bytes come", async () => {
    await serve({ lineMs: 300, idleMs: 5000 });
    const slow = client(path);
    await slow.ready;
    const drip = setInterval(() => slow.socket.write("x"), 50);
    const closedAfter = await slow.closed;
    clearInterval(drip);
    expect(closedAfter).toBeGreaterThanOrEqual(250);
    expect(closedAfter).toBeLessThan(2000);
  });

  it("answers a caller sending whole questions, one after another, past lineMs in all", async () => {
    await serve({ lineMs: 200 });
    const steady = client(path);
    for (let asked = 1; asked <= 4; asked++) {
      steady.socket.write(question);
      await waitFor(() => steady.answers().length === asked);
      await new Promise((resolve) => setTimeout(resolve, 80));
    }
    expect(steady.answers()).toHaveLength(4);
    steady.socket.destroy();
  });

  it("closes the caller that would take the bytes held across connections past heldBytes; a plugin is still answered, and a closed caller's share comes back", async () => {
    await serve({ heldBytes: 1000 });
    const first = client(path);
    first.socket.write("x".repeat(600));
    await new Promise((resolve) => setTimeout(resolve, 100));
    const second = client(path);
    second.socket.write("y".repeat(600));
    await second.closed;
    const plugin = await connectAgent(path, 2000, nodeConnector);
    expect(await plugin.ask({ get: "namespace", name: "shop" })).toEqual({ object: "namespace", cached: true });
    first.socket.destroy();
    await first.closed;
    const third = client(path);
    third.socket.write(`{"get":"namespace","name":"shop"}${" ".repeat(860)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    third.socket.write("\n");
    await waitFor(() => third.answers().length === 1);
    expect(third.answers()).toEqual(['{"object":"namespace","cached":true}']);
    third.socket.destroy();
    expect(lines.map((line) => line.fields?.reason)).toEqual(["1000 bytes of questions held across connections"]);
    plugin.close();
  });

  it("takes its path back from a listener put in its place (every reclaimMs), saying so; nothing to take back, nothing done", async () => {
    await serve({ reclaimMs: 50, reclaimSaidEveryMs: 0 });
    expect(await server.reclaim()).toBeUndefined();
    // Someone else's listener where the agent's socket was, as through a hostPath to its dir.
    unlinkSync(path);
    const other = createServer((socket) => socket.end('{"applied":{}}\n'));
    await new Promise<void>((resolve) => other.listen(path, () => resolve()));
    await waitFor(() => lines.some((line) => line.message === "the plugin's socket was replaced: took it back"));
    expect(lines.at(-1)).toEqual({
      level: "warn",
      message: "the plugin's socket was replaced: took it back",
      fields: { socket: path, found: "another socket", times: 1 },
    });
    const plugin = await connectAgent(path, 2000, nodeConnector);
    expect(await plugin.ask({ get: "namespace", name: "shop" })).toEqual({ object: "namespace", cached: true });
    plugin.close();
    // Closing a unix server unlinks its path by name (libuv): the agent's socket now, which the agent makes again.
    other.close();
    await waitFor(() => lines.some((line) => line.fields?.found === "nothing"));
    expect(statSync(path).isSocket()).toBe(true);
    const again = await connectAgent(path, 2000, nodeConnector);
    expect(await again.ask({ get: "namespace", name: "shop" })).toEqual({ object: "namespace", cached: true });
    again.close();
  });

  it("says the first take-back at once, then those after it at most every reclaimSaidEveryMs, with their count; counts each", async () => {
    let counted = 0;
    server = await servePlugin(
      path,
      async (ask) => ({ object: ask.get, cached: true }),
      anyCaller(),
      memoryLogger(lines),
      { ...socketBounds, reclaimMs: 10, reclaimSaidEveryMs: 200 },
      { takenBack: () => counted++, dropped: () => {} },
    );
    // A listener put back as soon as its path is taken, for 500 ms: about 50 take-backs.
    const others: ReturnType<typeof createServer>[] = [];
    const until = performance.now() + 500;
    while (performance.now() < until) {
      const other = createServer();
      rmSync(path, { force: true });
      await new Promise<void>((resolve) => other.listen(path, () => resolve()));
      others.push(other);
      await new Promise((resolve) => setTimeout(resolve, 15));
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
    const said = lines.filter((line) => line.message === "the plugin's socket was replaced: took it back");
    const times = said.map((line) => line.fields?.times as number);
    expect(times[0]).toBe(1);
    expect(said.length).toBeLessThanOrEqual(5);
    expect(times.slice(1).every((count) => count > 1)).toBe(true);
    expect(times.reduce((sum, count) => sum + count, 0)).toBeGreaterThan(said.length);
    // Each one counted (the metric), said or not yet.
    expect(counted).toBeGreaterThanOrEqual(times.reduce((sum, count) => sum + count, 0));
    for (const other of others) other.close();
  });

  it("the plugin does not ask a question longer than the agent reads: it does the work itself", async () => {
    await serve({});
    const plugin = await connectAgent(path, 2000, nodeConnector);
    await expect(plugin.ask({ get: "namespace", name: "x".repeat(maxAskBytes) })).rejects.toThrow(
      `a question longer than the agent reads (${maxAskBytes} bytes)`,
    );
    plugin.close();
  });

  it("takes each caller's first bytes before reading any: the netns passed with them reaches every answer; a refusal closes it unanswered", async () => {
    const passed = { dev: 4, ino: 4026532999 };
    const seen: unknown[] = [];
    let refuse = false;
    const callers = {
      admit: () => undefined,
      // What the kernel's check took: the first line, before the socket read it, and the netns with it.
      firstBytes: async () =>
        refuse ? { refused: "a descriptor passed that is no namespace" } : { bytes: Buffer.from(question), netns: passed },
    };
    server = await servePlugin(
      path,
      async (ask, netns) => {
        seen.push({ ask: ask.get, netns });
        return { object: ask.get, cached: true };
      },
      callers,
      memoryLogger(lines),
    );
    const asking = client(path);
    await waitFor(() => asking.answers().length === 1);
    asking.socket.write('{"get":"pod","namespace":"shop","name":"web"}\n');
    await waitFor(() => asking.answers().length === 2);
    asking.socket.destroy();
    expect(seen).toEqual([
      { ask: "namespace", netns: passed },
      { ask: "pod", netns: passed },
    ]);
    refuse = true;
    const refused = client(path);
    refused.socket.write(question);
    await refused.closed;
    expect(refused.answers()).toEqual([]);
    expect(seen).toHaveLength(2);
    expect(lines.map((line) => line.fields?.reason)).toEqual(["a descriptor passed that is no namespace"]);
  });

  it("a failure serving one caller (its first bytes unreadable, an answer that throws) closes that connection, said once; the agent answers the next", async () => {
    let failing: "firstBytes" | "answer" | undefined = "firstBytes";
    const callers = {
      admit: () => undefined,
      firstBytes: async () => {
        if (failing === "firstBytes") throw new Error("recvmsg failed: ECONNRESET");
        return { bytes: Buffer.alloc(0) };
      },
    };
    server = await servePlugin(
      path,
      async (ask) => {
        if (failing === "answer") throw new Error("the cache threw");
        return { object: ask.get, cached: true };
      },
      callers,
      memoryLogger(lines),
    );
    for (const failure of ["firstBytes", "answer", "firstBytes"] as const) {
      failing = failure;
      const dropped = client(path);
      dropped.socket.write(question);
      await dropped.closed;
      expect(dropped.answers()).toEqual([]);
    }
    failing = undefined;
    const asking = client(path);
    asking.socket.write(question);
    await waitFor(() => asking.answers().length === 1);
    expect(asking.answers()).toEqual(['{"object":"namespace","cached":true}']);
    asking.socket.destroy();
    expect(lines.map((line) => line.fields?.reason)).toEqual([
      "serving it failed: recvmsg failed: ECONNRESET",
      "serving it failed: the cache threw",
    ]);
  });
});
