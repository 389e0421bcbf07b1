import { closeSync } from "node:fs";
import { AgentUnavailableError } from "../agent-socket.js";
import { parseCniArgs, podIdentity } from "../cni/args.js";
import type { CniEnv } from "../cni/env.js";
import { CniError, type ErrorCode } from "../cni/errors.js";
import { type AgentConnection, agentTimeoutMs, connectAgent } from "../kube/agent-connection.js";
import { verifiedConnector } from "../kube/verified-connector.js";
import type { Logger, LogLevel } from "../log.js";
import { openPodNetns } from "../netns/enter.js";
import { formatPodKey } from "../pod-key.js";

/**
 * One question to the agent on its own connection, once its listener is proven the node's
 * agent, the pod's netns passed along (the agent writes into no other): its answer, or
 * AgentUnavailableError. Without a netns (DEL's is gone), only its record is the agent's to
 * remove.
 */
async function askAgent(socket: string, question: Parameters<AgentConnection["ask"]>[0], netnsFd?: number) {
  const connection = await connectAgent(socket, agentTimeoutMs, verifiedConnector(agentTimeoutMs, netnsFd));
  try {
    return await connection.ask(question);
  } finally {
    connection.close();
  }
}

/**
 * ADD through the agent: it parses the netconf, reads the pod and plans the rules with the
 * plugin's own code (see agent/decide.ts), and its writer writes them and the records into
 * the netns this process opened (`applied`), so this process loads none of that. Where the
 * agent cannot write (it cannot see the netns, its writer is busy past this process's wait),
 * it answers the decision and this process writes. Its refusal is this ADD's CNI error.
 * Undefined when the agent cannot decide (no socket, no answer in time, an answer that is
 * none, the API failing it): the caller goes the standalone way, asking the API itself.
 */
export async function addThroughAgent(
  stdin: string,
  env: CniEnv,
  socket: string,
  log: Logger,
  /** The logger the netconf asks for, once the agent has parsed it. */
  logFor: (level: LogLevel, file: string | undefined) => Logger,
): Promise<Record<string, unknown> | undefined> {
  const identity = podIdentity(parseCniArgs(env.args));
  // No pod: the standalone path passes it through, saying so.
  if (!identity) return undefined;
  const { containerId, ifname, netns } = env;
  // Before anything is asked: a redirect in the host's netns would take the node's TCP.
  const pod = openPodNetns(netns);
  let answer: Awaited<ReturnType<AgentConnection["ask"]>>;
  try {
    answer = await askAgent(socket, { get: "decision", netconf: stdin, ...identity, apply: { containerId, ifname, netns } }, pod.fd);
    if (!("applied" in answer) && !("decided" in answer) && !("refused" in answer))
      throw new AgentUnavailableError(socket, "an answer of another kind than asked");
  } catch (error) {
    if (!(error instanceof AgentUnavailableError)) throw error;
    log.warn("asking the API server instead of the agent", { pod: formatPodKey(identity), reason: error.message });
    return undefined;
  } finally {
    closeSync(pod.fd);
  }
  if ("applied" in answer) return answer.applied.result ?? {};
  if ("refused" in answer) throw new CniError(answer.refused.code as ErrorCode, answer.refused.msg, answer.refused.details);
  // Only where the agent could not write: its deps (and the backend) are loaded then. Where root writes (the state
  // dir, the log file, the backend) is this plugin's own netconf's to say, never an answer's.
  const [{ applyDecision }, { productionDeps }, { decidedSettings }] = await Promise.all([
    import("./apply.js"),
    import("./deps.js"),
    import("./settings.js"),
  ]);
  const settings = decidedSettings(stdin);
  const decided = { ...answer.decided, settings };
  await applyDecision({ containerId, ifname, netns }, decided, productionDeps(logFor(settings.logLevel, settings.logFile)));
  return decided.result;
}

/**
 * DEL through the agent: its writer removes the redirect and the record as DEL does, in
 * the netns this process opened. False when the agent did not (it is down, too slow, cannot
 * see the netns, or this process cannot open it): the caller removes them itself.
 */
export async function removeThroughAgent(stdin: string, env: CniEnv, socket: string, log: Logger): Promise<boolean> {
  const { containerId, ifname, netns } = env;
  let pod: ReturnType<typeof openPodNetns> | undefined;
  try {
    pod = netns ? openPodNetns(netns) : undefined;
  } catch {
    // Gone, not a netns, or the host's: DEL itself says which and what it does about it.
    return false;
  }
  try {
    const answer = await askAgent(socket, { get: "del", netconf: stdin, containerId, ifname, netns }, pod?.fd);
    if ("applied" in answer) return true;
    throw new AgentUnavailableError(socket, "an answer of another kind than asked");
  } catch (error) {
    if (!(error instanceof AgentUnavailableError)) throw error;
    log.warn("removing the redirect itself: the agent did not", { reason: error.message });
    return false;
  } finally {
    if (pod) closeSync(pod.fd);
  }
}
