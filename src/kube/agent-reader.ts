import { type AgentAnswer, type AgentAsk, AgentUnavailableError, PodGoneError } from "../agent-socket.js";
import { type Connector, connectAgent } from "./agent-connection.js";
import { namespaceAnswer, podAnswer, serviceAnswer } from "./answers.js";
import type { KubeReader } from "./pod-reader.js";

/**
 * The reads answered by the agent's answers (over its socket, or the agent's own when it
 * decides for the plugin), each checked as the API's are (the object asked for,
 * well-formed); a pod gone throws PodGoneError, any other answer that is no object
 * AgentUnavailableError.
 */
export function answersReader(ask: (question: AgentAsk) => Promise<AgentAnswer>, socket: string, close: () => void): KubeReader {
  const object = async (question: AgentAsk) => {
    const answer = await ask(question);
    if ("object" in answer) return answer.object;
    if ("gone" in answer) throw new PodGoneError(answer.gone);
    throw new AgentUnavailableError(socket, "error" in answer ? answer.error : "an answer of another kind than asked");
  };
  return {
    readPod: async (namespace, name, uid) =>
      podAnswer(await object({ get: "pod", namespace, name, ...(uid ? { uid } : {}) }), namespace, name),
    readNamespace: async (name) => namespaceAnswer(await object({ get: "namespace", name }), name),
    readService: async (namespace, name) => serviceAnswer(await object({ get: "service", namespace, name }), namespace, name),
    close,
  };
}

/** The plugin's reads, asked of the agent on its socket; an agent that cannot answer throws AgentUnavailableError. */
export async function createAgentReader(socket: string, timeoutMs: number, connect: Connector): Promise<KubeReader> {
  const connection = await connectAgent(socket, timeoutMs, connect);
  return answersReader(connection.ask, socket, () => connection.close());
}
