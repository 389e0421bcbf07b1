import { connect } from "node:net";
import { type AgentAnswer, type AgentAsk, AgentUnavailableError, maxLineBytes, parseAnswer } from "../agent-socket.js";
import { errnoCode, errorMessage } from "../errors.js";
import { namespaceAnswer, podAnswer, serviceAnswer } from "./answers.js";
import type { KubeReader } from "./pod-reader.js";

/**
 * The plugin's reads, asked of the agent on its unix socket: one connection, one line per
 * question, everything within `timeoutMs`. The answers are checked as the API's are (the
 * pod asked for, well-formed); an agent that cannot answer throws AgentUnavailableError.
 */
export async function createAgentReader(socket: string, timeoutMs: number): Promise<KubeReader> {
  const connection = connect(socket);
  connection.setEncoding("utf8");
  let failure: AgentUnavailableError | undefined;
  const waiting = new Set<(line: string | AgentUnavailableError) => void>();
  const fail = (reason: string) => {
    clearTimeout(deadline);
    failure ??= new AgentUnavailableError(socket, reason);
    for (const settle of waiting) settle(failure);
    waiting.clear();
    connection.destroy();
  };
  // Declared before fail() uses it; a pending deadline must not keep the plugin's process alive.
  const deadline: NodeJS.Timeout = setTimeout(() => fail(`no answer within ${timeoutMs} ms`), timeoutMs);
  deadline.unref();
  connection.on("error", (error) => fail(errnoCode(error) ?? errorMessage(error)));
  connection.on("close", () => fail("it closed the connection"));
  let buffered = "";
  connection.on("data", (chunk: string) => {
    buffered += chunk;
    if (buffered.length > maxLineBytes) return fail("an answer longer than a line may be");
    for (let end = buffered.indexOf("\n"); end >= 0; end = buffered.indexOf("\n")) {
      const line = buffered.slice(0, end);
      buffered = buffered.slice(end + 1);
      const [settle] = waiting;
      if (!settle) return fail("an answer nobody asked for");
      waiting.delete(settle);
      settle(line);
    }
  });
  await new Promise<void>((resolve, reject) => {
    connection.once("connect", resolve);
    connection.once("close", () => reject(failure));
  });

  const ask = async (question: AgentAsk): Promise<unknown> => {
    if (failure) throw failure;
    const line = await new Promise<string | AgentUnavailableError>((settle) => {
      waiting.add(settle);
      connection.write(`${JSON.stringify(question)}\n`);
    });
    if (line instanceof AgentUnavailableError) throw line;
    let answer: AgentAnswer;
    try {
      answer = parseAnswer(line);
    } catch (error) {
      throw new AgentUnavailableError(socket, `not an answer: ${errorMessage(error)}`);
    }
    if ("error" in answer) throw new AgentUnavailableError(socket, answer.error);
    return answer.object;
  };
  return {
    readPod: async (namespace, name, uid) =>
      podAnswer(await ask({ get: "pod", namespace, name, ...(uid ? { uid } : {}) }), namespace, name),
    readNamespace: async (name) => namespaceAnswer(await ask({ get: "namespace", name }), name),
    readService: async (namespace, name) => serviceAnswer(await ask({ get: "service", namespace, name }), namespace, name),
    close() {
      clearTimeout(deadline);
      connection.removeAllListeners("close");
      connection.destroy();
    },
  };
}
