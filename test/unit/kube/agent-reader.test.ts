import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { V1Pod } from "@kubernetes/client-node";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { servePlugin } from "../../../src/agent/socket/plugin-socket.js";
import { type AgentAnswer, type AgentAsk, AgentUnavailableError, PodGoneError } from "../../../src/agent-socket.js";
import { createAgentReader } from "../../../src/kube/agent-reader.js";
import { AnswerError } from "../../../src/kube/answers.js";
import { createLogger } from "../../../src/log.js";
import { decisionFields } from "../../../src/mesh/pod.js";
import { anyCaller, nodeConnector } from "../../kit/agent/socket.js";
import { podObject } from "../../kit/api/server.js";

/** The plugin's socket served to anyone (the peer check needs the compiled binary's FFI: test/netns has it). */
const serve = (path: string, answer: (ask: AgentAsk) => Promise<AgentAnswer>) =>
  servePlugin(path, answer, anyCaller(), createLogger({ level: "error" }));

/** The plugin's side of the agent's socket: what it asks, and what it makes of each kind of answer. */
describe("the agent reader", () => {
  let dir: string;
  let socket: string;
  let server: { close(): Promise<void> } | undefined;
  const asked: AgentAsk[] = [];

  /** A raw server answering each line with `reply(line)` (undefined: no answer; "close": it hangs up). */
  const rawServer = async (reply: (line: string) => string | undefined) => {
    const raw = createServer((connection) => {
      connection.setEncoding("utf8");
      connection.on("data", (chunk: string) => {
        for (const line of chunk.split("\n").filter(Boolean)) {
          const answer = reply(line);
          if (answer === "close") connection.end();
          else if (answer !== undefined) connection.write(`${answer}\n`);
        }
      });
    });
    await new Promise<void>((resolve) => raw.listen(socket, resolve));
    server = { close: () => new Promise<void>((resolve) => raw.close(() => resolve())) };
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "meshcni-reader-"));
    socket = join(dir, "agent", "plugin.sock");
    asked.length = 0;
  });
  afterEach(async () => {
    await server?.close();
    server = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  it("asks for the pod (with the runtime's UID) and its namespace on one connection, checking each answer as an API answer", async () => {
    server = await serve(socket, async (ask) => {
      asked.push(ask);
      return ask.get === "pod"
        ? { object: decisionFields(podObject(ask.namespace, ask.name, { proxy: "container" }) as V1Pod), cached: true }
        : { object: { kind: "Namespace", metadata: { name: "name" in ask ? ask.name : "" } }, cached: false };
    });
    const reader = await createAgentReader(socket, 1000, nodeConnector);
    const pod = await reader.readPod("shop", "web", "uid-1");
    const namespace = await reader.readNamespace("shop");
    reader.close();
    expect(pod.metadata?.name).toBe("web");
    expect(namespace.metadata?.name).toBe("shop");
    expect(asked).toEqual([
      { get: "pod", namespace: "shop", name: "web", uid: "uid-1" },
      { get: "namespace", name: "shop" },
    ]);
  });

  it("fails closed on an answer about another pod: an AnswerError, not a reason to ask the API instead", async () => {
    server = await serve(socket, async () => ({
      object: decisionFields(podObject("shop", "other") as V1Pod),
      cached: true,
    }));
    const reader = await createAgentReader(socket, 1000, nodeConnector);
    const reading = reader.readPod("shop", "web");
    await expect(reading).rejects.toThrow(AnswerError);
    await expect(reading).rejects.toThrow("the API server answered with Pod shop/other, not shop/web");
    reader.close();
  });

  it("fails closed on a pod the agent says is gone: a PodGoneError, not a reason to ask the API instead", async () => {
    server = await serve(socket, async () => ({ gone: "the API server has no such pod (404 Not Found)" }));
    const reader = await createAgentReader(socket, 1000, nodeConnector);
    const reading = reader.readPod("shop", "web", "uid-1");
    await expect(reading).rejects.toThrow(new PodGoneError("the API server has no such pod (404 Not Found)"));
    await expect(reading).rejects.not.toThrow(AgentUnavailableError);
    reader.close();
  });

  it("says the agent is unavailable when it names an error, answers garbage, closes, or says nothing in time", async () => {
    server = await serve(socket, async () => ({ error: "401 Unauthorized: the API server refused" }));
    const refused = await createAgentReader(socket, 1000, nodeConnector);
    await expect(refused.readPod("shop", "web")).rejects.toThrow(
      new AgentUnavailableError(socket, "401 Unauthorized: the API server refused"),
    );
    refused.close();
    await server!.close();

    await rawServer(() => "{]");
    const garbled = await createAgentReader(socket, 1000, nodeConnector);
    await expect(garbled.readPod("shop", "web")).rejects.toThrow(/did not answer: not an answer/);
    garbled.close();
    await server!.close();

    await rawServer(() => "close");
    const closing = await createAgentReader(socket, 1000, nodeConnector);
    await expect(closing.readPod("shop", "web")).rejects.toThrow(new AgentUnavailableError(socket, "it closed the connection"));
    await server!.close();

    await rawServer(() => undefined);
    const silent = await createAgentReader(socket, 100, nodeConnector);
    const started = performance.now();
    await expect(silent.readPod("shop", "web")).rejects.toThrow(new AgentUnavailableError(socket, "no answer within 100 ms"));
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it("says the agent is unavailable when nobody listens at the socket", async () => {
    await expect(createAgentReader(socket, 1000, nodeConnector)).rejects.toThrow(new AgentUnavailableError(socket, "ENOENT"));
  });
});
