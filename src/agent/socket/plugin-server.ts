import type { V1Namespace, V1Pod, V1Service } from "@kubernetes/client-node";
import type { AgentAnswer, AgentAsk } from "../../agent-socket.js";
import { resultAddresses } from "../../cni/result.js";
import { errorMessage } from "../../errors.js";
import { hostPaths } from "../../host.js";
import { agentTimeoutMs } from "../../kube/agent-connection.js";
import { describeApiFailure, isNotFound } from "../../kube/errors.js";
import { type Logger, type LogLevel, pluginLogger } from "../../log.js";
import { type NetConf, parseNetConf } from "../../mesh/netconf.js";
import { decisionFields, namespaceDecisionFields, serviceDecisionFields } from "../../mesh/pod.js";
import type { NetnsId } from "../../netns/enter.js";
import { logUnmeshed } from "../../plugin/apply.js";
import type { AgentMetrics } from "../metrics.js";
import { otherRedirect, outsideScope, type WriteScope } from "../writers/write-scope.js";
import type { Writing } from "../writers/writing.js";
import { socketBounds } from "./bounds.js";
import { decideForPlugin } from "./decide.js";
import type { NodeCache } from "./node-cache.js";
import type { CallerChecks } from "./peer.js";
import { type PluginServer, servePlugin } from "./plugin-socket.js";

/** Where an answer comes from when the cache has none, or an outdated one: the agent's API client. */
export interface Lookup {
  /** The agent's node: the socket answers about its pods alone. */
  node: string;
  readPod(namespace: string, name: string): Promise<V1Pod>;
  readNamespace(name: string): Promise<V1Namespace>;
  readService(namespace: string, name: string): Promise<V1Service>;
}

/** Why the agent does not write for a caller that named a netns without passing it (an older plugin, or one asserting what it does not hold). */
const noNetnsPassed = "the caller passed no netns descriptor with its question";

/**
 * A write must start within this of the question, or the plugin writes itself: half the
 * plugin's wait, so that a write started at the last moment is answered before the plugin
 * stops waiting (a write takes milliseconds; the writer queue is what can take long).
 */
const writeStartsWithinMs = agentTimeoutMs / 2;

/**
 * The answer to one question: from the cache when it has the object (the pod of the UID
 * asked for), else from the API over the agent's warm connection (a pod recreated under
 * the same name, or one asked for without its UID, is read afresh). ADD's decision and DEL
 * asked with an attachment are carried out by the writer when there is one, in the netns
 * the caller passed (`netns`) and only where the attachment's path names it too; whatever it
 * cannot do is left to the plugin (a decision, or an error for DEL).
 */
export async function answerAsk(
  ask: AgentAsk,
  cache: NodeCache,
  lookup: Lookup,
  log: Logger,
  writing?: Writing,
  netns?: NetnsId,
): Promise<AgentAnswer> {
  const deadline = performance.now() + writeStartsWithinMs;
  if (ask.get === "decision") {
    const cachedBefore = cache.pod(ask.namespace, ask.name);
    const answer = await decideForPlugin(ask, (question) => answerAsk(question, cache, lookup, log), log);
    if (ask.apply) writing?.nothingWritten?.forget(ask.apply.containerId, ask.apply.ifname);
    if (!ask.apply || !writing || !("decided" in answer) || answer.decided.settings.simulate) return answer;
    const { containerId, ifname, netns: path } = ask.apply;
    const { pod, plans, settings } = answer.decided;
    const outside =
      outsideScope(writing.scope, { stateDir: settings.stateDir, logFile: settings.logFile, netns: path }) ??
      otherRedirect(writing.scope, parseNetConf(ask.netconf).linkerd);
    if (outside || !netns) {
      writing.handBack("ADD", outside ?? noNetnsPassed);
      return answer;
    }
    if (plans.length === 0) {
      // Nothing to write: the plugin's line, written here (the writer's round trip would be most of this ADD).
      logAsPlugin(writing.hostRoot, settings.logLevel, settings.logFile, { command: "ADD", containerId }, (pluginLog) =>
        logUnmeshed(pod, pluginLog),
      );
      writing.nothingWritten?.note(containerId, ifname);
      return { applied: { result: answer.decided.result } };
    }
    const untied = await writing.untied?.(pod, containerId, path);
    if (untied) {
      writing.handBack("ADD", untied);
      return answer;
    }
    const outcome = await writing.write(
      { verb: "ADD", hostRoot: writing.hostRoot, target: { containerId, ifname, netns: path }, netnsId: netns, pod, plans, settings },
      deadline,
    );
    if ("done" in outcome) {
      // Noted only when the decision read the pod from the cache (asked by its UID) and the cache still holds that very object.
      const fromCache = ask.uid !== undefined && cachedBefore?.metadata?.uid === ask.uid;
      if (fromCache && cache.pod(ask.namespace, ask.name) === cachedBefore)
        writing.written?.note(cachedBefore, resultAddresses(answer.decided.result));
      return { applied: { result: answer.decided.result } };
    }
    log.warn("the plugin writes the redirect itself: the agent could not", { pod: `${pod.namespace}/${pod.name}`, reason: outcome.failed });
    return answer;
  }
  if (ask.get === "del") {
    const { containerId, ifname, netns: path, netconf } = ask;
    if (!writing) return { error: "this agent does not write" };
    const scoped = delInScope(writing.scope, netconf, path, netns);
    if ("outside" in scoped) {
      writing.handBack("DEL", scoped.outside);
      return { error: `the agent does not remove it: ${scoped.outside}` };
    }
    const { conf } = scoped;
    if (writing.nothingWritten?.take(containerId, ifname)) {
      logAsPlugin(writing.hostRoot, conf.log_level, conf.log_file, { command: "DEL", containerId }, (pluginLog) =>
        pluginLog.info("nothing to remove: its ADD wrote nothing (the pod is not meshed)"),
      );
      return { applied: {} };
    }
    const outcome = await writing.write(
      {
        verb: "DEL",
        hostRoot: writing.hostRoot,
        target: { containerId, ifname, netns: path },
        ...(netns ? { netnsId: netns } : {}),
        netconf,
        proxyPorts: [writing.scope.linkerd["incoming-proxy-port"], writing.scope.linkerd["outgoing-proxy-port"]],
      },
      deadline,
    );
    return "done" in outcome ? { applied: {} } : { error: `the agent could not remove it: ${outcome.failed}` };
  }
  try {
    if (ask.get === "service") {
      const cached = cache.service(ask.namespace, ask.name);
      if (cached) return { object: serviceDecisionFields(cached), cached: true };
      return { object: serviceDecisionFields(await lookup.readService(ask.namespace, ask.name)), cached: false };
    }
    if (ask.get === "pod") {
      const cached = cache.pod(ask.namespace, ask.name);
      // Without the runtime's UID the cache cannot tell a pod recreated under the same name (its
      // watch event still on the way) from the one asked for: only the API can.
      if (cached && ask.uid !== undefined && cached.metadata?.uid === ask.uid) return { object: decisionFields(cached), cached: true };
      if (ask.uid !== undefined && cache.podDeleted(ask.uid))
        return { gone: `its UID ${ask.uid} was deleted (the agent's watch saw it go)` };
      const read = await lookup.readPod(ask.namespace, ask.name);
      // The cache holds the node's pods alone; the API has every pod of the cluster, which a caller of this socket has no need of.
      const on = read.spec?.nodeName;
      if (on !== lookup.node)
        return {
          error: `pod ${ask.namespace}/${ask.name} is ${on ? `on node ${on}` : "on no node"}, not ${lookup.node}: the agent answers about its node's pods alone`,
        };
      return { object: decisionFields(read), cached: false };
    }
    const cached = cache.namespace(ask.name);
    if (cached) return { object: namespaceDecisionFields(cached), cached: true };
    return { object: namespaceDecisionFields(await lookup.readNamespace(ask.name)), cached: false };
  } catch (error) {
    if (ask.get === "pod" && isNotFound(error)) return { gone: "the API server has no such pod (404 Not Found)" };
    return { error: describeApiFailure(error).cause };
  }
}

/** The plugin's lines (its netconf's level and log file) for an ADD or DEL the agent answers without a writer. */
function logAsPlugin(
  hostRoot: string,
  level: LogLevel,
  file: string | undefined,
  prefix: { command: "ADD" | "DEL"; containerId: string },
  say: (pluginLog: Logger) => void,
): void {
  const pluginLog = pluginLogger(level, file, hostPaths(hostRoot), prefix);
  try {
    say(pluginLog);
  } finally {
    pluginLog.close();
  }
}

/** A DEL's netconf, or why the agent leaves that DEL to the plugin. */
function delInScope(scope: WriteScope, netconf: string, path: string, netns: NetnsId | undefined): { conf: NetConf } | { outside: string } {
  let conf: NetConf;
  try {
    conf = parseNetConf(netconf);
  } catch (error) {
    return { outside: `its netconf: ${errorMessage(error)}` };
  }
  // A netns named and not passed: the writer could take another for it, or one it cannot see for gone.
  const outside =
    outsideScope(scope, { stateDir: conf.state_dir, logFile: conf.log_file, netns: path }) ?? (path && !netns ? noNetnsPassed : undefined);
  return outside ? { outside } : { conf };
}

/** Where the plugin's socket is, what answers on it, and who may ask. */
export interface PluginSocketConfig {
  /** The socket's path inside the agent's container. */
  path: string;
  cache: NodeCache;
  lookup: Lookup;
  writing: Writing | undefined;
  /** What the kernel says of each caller (who it is, the netns it passed). */
  callers: () => Promise<CallerChecks>;
}

/**
 * The socket's one start: answers the plugin from the caches while they are fresh, else
 * through `lookup`, each ADD's and DEL's answer timed. Undefined when it cannot listen:
 * the plugin then asks the API server itself.
 */
export async function startPluginSocket(config: PluginSocketConfig, log: Logger, metrics: AgentMetrics): Promise<PluginServer | undefined> {
  const answer = async (ask: AgentAsk, netns: NetnsId | undefined) => {
    const verb = ask.get === "decision" ? "ADD" : ask.get === "del" ? "DEL" : undefined;
    const timer = verb && metrics.answers.startTimer({ verb });
    return answerAsk(ask, config.cache, config.lookup, log, config.writing, netns).finally(() => timer?.());
  };
  try {
    const counts = { takenBack: () => metrics.socketTakenBack.inc(), dropped: () => metrics.socketDropped.inc() };
    const server = await servePlugin(config.path, answer, await config.callers(), log, socketBounds, counts);
    log.info("answering the plugin", { socket: config.path });
    return server;
  } catch (error) {
    log.error("cannot answer the plugin on its socket: it asks the API server itself", { socket: config.path, error: errorMessage(error) });
    return undefined;
  }
}
