import { writeSync } from "node:fs";
import { createInterface } from "node:readline";
import { errorMessage } from "../errors.js";
import { hostPaths } from "../host.js";
import { pluginLogger } from "../log.js";
import { parseNetConf } from "../mesh/netconf.js";
import { inNetns } from "../netns/enter.js";
import { applyDecision } from "../plugin/apply.js";
import { del } from "../plugin/del.js";
import { productionDeps } from "../plugin/deps.js";
import { toCniError } from "../plugin/failure.js";
import { parseWriteRequest, type WriteReply, type WriteRequest } from "./contract.js";

export const applyUsage = `Usage: meshcni apply

The agent's writer: the agent runs it and keeps it running. Each line on stdin is an ADD
decision or a DEL for one attachment (applier/contract.ts); each is carried out with the
plugin's own code, in the netns the plugin opened, one at a time, and answered with one
line on stdout. Not for use by hand.
`;

/** Closes after the answer is written: the loop takes a request already waiting first, and closes when it waits. */
const closeLater = (close: () => void) => void setImmediate(close);

/** One request: ADD's decision or DEL, logged as the plugin would log it (stderr and the netconf's log_file). */
async function carryOut(request: WriteRequest): Promise<void> {
  const onHost = hostPaths(request.hostRoot);
  const { containerId, ifname, netns } = request.target;
  if (request.verb === "ADD") {
    const { logLevel, logFile } = request.settings;
    const log = pluginLogger(logLevel, logFile, onHost, { command: "ADD", containerId });
    try {
      await applyDecision(request.target, request, {
        log,
        onHost,
        inNetns: (path, action) => inNetns(onHost(path), action, request.netnsId),
        closeLater,
      });
    } finally {
      log.close();
    }
    return;
  }
  const conf = parseNetConf(request.netconf);
  const log = pluginLogger(conf.log_level, conf.log_file, onHost, { command: "DEL", containerId });
  try {
    const env = { command: "DEL" as const, containerId, ifname, netns, args: "", path: "" };
    await del(
      { env, conf },
      productionDeps(log, { root: request.hostRoot, closeLater, ...(request.netnsId ? { netnsId: request.netnsId } : {}) }),
    );
  } finally {
    log.close();
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
      await carryOut(request);
      reply = { id, done: true };
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
