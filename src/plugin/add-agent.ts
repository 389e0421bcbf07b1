import { AgentUnavailableError } from "../agent-socket.js";
import { parseCniArgs, podIdentity } from "../cni/args.js";
import type { CniEnv } from "../cni/env.js";
import { CniError, type ErrorCode } from "../cni/errors.js";
import { type AgentConnection, agentTimeoutMs, connectAgent } from "../kube/agent-connection.js";
import type { Logger, LogLevel } from "../log.js";
import { checkPodNetns } from "../netns/enter.js";
import { formatPodKey } from "../pod-key.js";

/**
 * ADD on the agent's decision: it parses the netconf, reads the pod and plans the rules
 * with the plugin's own code (see agent/decide.ts), so this process loads none of that and
 * only writes the plans. Its refusal is this ADD's CNI error. Undefined when the agent
 * cannot decide (no socket, no answer in time, an answer that is none, the API failing
 * it): the caller goes the standalone way, asking the API itself.
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
  // Before anything is asked: a redirect in the host's netns would take the node's TCP.
  checkPodNetns(env.netns);
  let answer: Awaited<ReturnType<AgentConnection["ask"]>>;
  try {
    const connection = await connectAgent(socket, agentTimeoutMs);
    try {
      answer = await connection.ask({ get: "decision", netconf: stdin, ...identity });
    } finally {
      connection.close();
    }
    if (!("decided" in answer) && !("refused" in answer)) throw new AgentUnavailableError(socket, "an answer of another kind than asked");
  } catch (error) {
    if (!(error instanceof AgentUnavailableError)) throw error;
    log.warn("asking the API server instead of the agent", { pod: formatPodKey(identity), reason: error.message });
    return undefined;
  }
  if ("refused" in answer) throw new CniError(answer.refused.code as ErrorCode, answer.refused.msg, answer.refused.details);
  const { result, pod, plans, settings } = answer.decided;
  const decidedLog = logFor(settings.logLevel, settings.logFile);
  if (plans.length === 0) {
    decidedLog.info("pod is not meshed: no redirect", { pod: formatPodKey(pod) });
    return result;
  }
  if (settings.simulate) {
    (await import("./apply.js")).logSimulated(pod, plans, { log: decidedLog });
    return result;
  }
  // Loaded only for a meshed pod: an unmeshed pod's ADD is a question and its answer.
  const [{ pluginRedirector }, { fileRecordStore }, { writeRedirect }, { inNetns }] = await Promise.all([
    import("../host.js"),
    import("../state/records.js"),
    import("./apply.js"),
    import("../netns/enter.js"),
  ]);
  const preparing = pluginRedirector(settings, decidedLog);
  const { containerId, ifname, netns } = env;
  await writeRedirect({ containerId, ifname, netns }, pod, plans, preparing, fileRecordStore(settings.stateDir), {
    inNetns,
    log: decidedLog,
  });
  return result;
}
