import { writeSync } from "node:fs";
import { createInterface } from "node:readline";
import { lookAtNetns } from "../audit/netns-look.js";
import { errorMessage } from "../errors.js";
import { hostPaths } from "../host.js";
import { type LogLevel, pluginLogger } from "../log.js";
import { parseNetConf } from "../mesh/netconf.js";
import { NetnsGoneError } from "../netns/enter.js";
import { listeningHere } from "../netns/listening.js";
import { applyDecision } from "../plugin/apply.js";
import { del } from "../plugin/del.js";
import { productionDeps } from "../plugin/deps.js";
import { toCniError } from "../plugin/failure.js";
import type { PluginDeps } from "../plugin/request.js";
import { parseWriteRequest, type WriteReply, type WriteRequest } from "./contract.js";

export const applyUsage = `Usage: meshcni apply

The agent's writer: the agent runs it and keeps it running. Each line on stdin is an ADD
decision or a DEL for one attachment (applier/contract.ts); each is carried out with the
plugin's own code, in the netns the plugin opened, one at a time, and answered with one
line on stdout. A LOOK line asks how pods' netns are now (read only). Not for use by hand.
`;

/** Closes after the answer is written: the loop takes a request already waiting first, and closes when it waits. */
const closeLater = (close: () => void) => void setImmediate(close);

/**
 * One request: ADD's decision or DEL, with the plugin's deps as the agent's container sees
 * the host (paths under its host root, only the netns the plugin opened), logged as the
 * plugin would log it (stderr and the netconf's log_file).
 */
async function carryOut(request: WriteRequest): Promise<void> {
  const onHost = hostPaths(request.hostRoot);
  const { containerId, ifname, netns } = request.target;
  const host = { root: request.hostRoot, closeLater, ...(request.netnsId ? { netnsId: request.netnsId } : {}) };
  const withDeps = async (level: LogLevel, file: string | undefined, work: (deps: PluginDeps) => Promise<unknown>) => {
    const log = pluginLogger(level, file, onHost, { command: request.verb, containerId });
    try {
      await work(productionDeps(log, host));
    } finally {
      log.close();
    }
  };
  if (request.verb === "ADD")
    return withDeps(request.settings.logLevel, request.settings.logFile, (deps) => applyDecision(request.target, request, deps));
  const conf = parseNetConf(request.netconf);
  const env = { command: "DEL" as const, containerId, ifname, netns, args: "", path: "" };
  const { proxyPorts } = request;
  return withDeps(conf.log_level, conf.log_file, async (deps) => {
    if (netns) await refuseWhileProxyListens(netns, proxyPorts, deps);
    await del({ env, conf }, deps);
  });
}

/**
 * The runtime calls DEL once the sandbox's containers are stopped (containerd and CRI-O
 * stop them first): a proxy port still listened on in the netns is a running pod, and a DEL
 * for it comes from a caller of its own making. Not removed by the agent: the caller then
 * needs the capabilities to do it itself, which the runtime's plugin has. A netns gone has
 * nothing left to keep.
 */
async function refuseWhileProxyListens(netns: string, proxyPorts: number[], deps: PluginDeps): Promise<void> {
  try {
    await deps.inNetns(netns, async () => {
      const listening = await listeningHere();
      const listened = proxyPorts.filter((port) => listening.has(port));
      if (listened.length > 0)
        throw new Error(`port ${listened.join(" and ")} is listened on in the netns, as the pod's proxy does: its pod still runs`);
    });
  } catch (error) {
    if (!(error instanceof NetnsGoneError)) throw error;
  }
}

/** Reads requests until stdin ends, carrying out each in turn (a netns is entered by this one thread). */
export async function runApply(): Promise<number> {
  for await (const line of createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY })) {
    let reply: WriteReply;
    let id = -1;
    try {
      const request = parseWriteRequest(line);
      id = request.id;
      if (request.verb === "LOOK") reply = { id, looked: await lookAtNetns(request.netns.map(hostPaths(request.hostRoot))) };
      else {
        await carryOut(request);
        reply = { id, done: true };
      }
    } catch (error) {
      reply = {
        id,
        failed: error instanceof Error && error.name === "ValiError" ? `not a request: ${errorMessage(error)}` : toCniError(error).message,
      };
    }
    writeSync(1, `${JSON.stringify(reply)}\n`);
  }
  return 0;
}
