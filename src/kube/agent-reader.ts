import { type AgentAsk, AgentUnavailableError } from "../agent-socket.js";
import { type Connector, connectAgent } from "./agent-connection.js";
import { namespaceAnswer, podAnswer, serviceAnswer } from "./answers.js";
import type { KubeReader } from "./pod-reader.js";

/**
 * The plugin's reads, asked of the agent. The answers are checked as the API's are (the pod
 * asked for, well-formed); an agent that cannot answer throws AgentUnavailableError.
 */
export async function createAgentReader(socket: string, timeoutMs: number, connect?: Connector): Promise<KubeReader> {
  const connection = await connectAgent(socket, timeoutMs, connect);
  const object = async (question: AgentAsk) => {
    const answer = await connection.ask(question);
    if (!("object" in answer)) throw new AgentUnavailableError(socket, "an answer of another kind than asked");
    return answer.object;
  };
  return {
    readPod: async (namespace, name, uid) =>
      podAnswer(await object({ get: "pod", namespace, name, ...(uid ? { uid } : {}) }), namespace, name),
    readNamespace: async (name) => namespaceAnswer(await object({ get: "namespace", name }), name),
    readService: async (namespace, name) => serviceAnswer(await object({ get: "service", namespace, name }), namespace, name),
    close: () => connection.close(),
  };
}
