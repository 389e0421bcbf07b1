import { writeSync } from "node:fs";
import { readCniEnv, type Verb } from "../cni/env.js";
import { CniError, ErrorCode } from "../cni/errors.js";
import { compareVersions, isSupportedVersion, latestVersion, versionInfo } from "../cni/version.js";
import { createLogger, type LogLevel } from "../log.js";
import type { PluginDeps, PluginRequest, VerbHandler } from "./request.js";
// The agent's client is loaded with the plugin, not when asked: importing its chunks then cost
// ~0.3 ms of a ~9 ms ADD through the agent, and VERSION measured no slower for it (npm run bench).
import { addThroughAgent, removeThroughAgent } from "./through-agent.js";
import { startWatchdog } from "./watchdog.js";

/** The verbs that read a netconf, each loaded when called (a pod start pays for its verb's code only); VERSION is answered before one is read. */
const handlers: Record<Exclude<Verb, "VERSION">, () => Promise<VerbHandler>> = {
  ADD: async () => (await import("./add.js")).add,
  CHECK: async () => (await import("./check.js")).check,
  DEL: async () => (await import("./del.js")).del,
  STATUS: async () => (await import("./status.js")).status,
  GC: async () => (await import("./gc.js")).gc,
};

/** Runtimes write the netconf and close stdin at once; a stdin that never closes must not hang the plugin. */
const stdinTimeoutMs = 5000;
const stdinMaxBytes = 16 << 20;
/** Beyond the API's deadline, what the rest of an invocation may take (iptables' own limit is 10 s). */
const watchdogSlackMs = 15_000;

/**
 * Reads stdin to its end, without blocking the event loop, within stdinTimeoutMs and
 * stdinMaxBytes. Through Bun's own stdin stream: node:stream's process.stdin costs ~1 ms
 * more to set up, paid by every pod start.
 */
async function readStdin(): Promise<string> {
  const reader = Bun.stdin.stream().getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reading = (async () => {
    for (let next = await reader.read(); !next.done; next = await reader.read()) {
      size += next.value.length;
      if (size > stdinMaxBytes)
        throw new CniError(ErrorCode.decodeFailure, `network config on stdin is larger than ${stdinMaxBytes >> 20} MiB`);
      chunks.push(next.value);
    }
    return Buffer.concat(chunks).toString("utf8");
  })();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new CniError(ErrorCode.decodeFailure, `stdin was not closed within ${stdinTimeoutMs / 1000} s: no complete network config`));
    }, stdinTimeoutMs);
  });
  try {
    return await Promise.race([reading, timeout]);
  } finally {
    clearTimeout(timer);
    // An unfinished read would keep the process alive after the answer.
    reading.catch(() => undefined);
    void reader.cancel().catch(() => undefined);
  }
}

/** The netconf's keys read before its schema is loaded; no JSON object (the schema's path says why) is an empty one. */
function headOf(stdin: string): { agent_socket?: unknown; probe?: unknown; cniVersion?: unknown; prevResult?: unknown } {
  try {
    const head = JSON.parse(stdin) as unknown;
    return typeof head === "object" && head !== null ? head : {};
  } catch {
    return {};
  }
}

/** The keys of the agent's probe as the runtime hands it over (libcni adds the name, version, previous result and runtime config). */
const probeKeys = new Set(["type", "probe", "name", "cniVersion", "prevResult", "runtimeConfig", "capabilities", "args"]);

/**
 * The agent's probe (a drop-in of `{"type": "meshcni", "probe": true}`, to see whether the
 * runtime loads drop-ins): ADD passes the previous result on, the other verbs do nothing;
 * no rule, record or file is written for it.
 */
function probeAnswer(head: ReturnType<typeof headOf>, command: Verb): Record<string, unknown> | undefined {
  // Fail closed: an entry that says how to redirect as well is no probe, and never passes pods through.
  const extra = Object.keys(head).filter((key) => !probeKeys.has(key));
  if (extra.length > 0)
    throw new CniError(
      ErrorCode.invalidNetworkConfig,
      `"probe" is the agent's test of drop-ins, alone: this netconf also sets ${extra.join(", ")}`,
    );
  if (command !== "ADD") return undefined;
  const version = isSupportedVersion(head.cniVersion) ? head.cniVersion : latestVersion;
  const previous = typeof head.prevResult === "object" && head.prevResult !== null ? head.prevResult : {};
  return { ...previous, cniVersion: version };
}

/** Writes the runtime's answer at once (synchronously), so even an exit right after it loses nothing. */
function print(answer: Record<string, unknown>): void {
  writeSync(1, `${JSON.stringify(answer)}\n`);
}

/** The cniVersion an error is reported in: the config's, when it named one we speak. */
function errorVersion(stdin: string): string {
  try {
    const version = (JSON.parse(stdin) as { cniVersion?: unknown }).cniVersion;
    return isSupportedVersion(version) ? version : latestVersion;
  } catch {
    return latestVersion;
  }
}

/** Runs one verb of a parsed request; STATUS and GC exist from cniVersion 1.1.0. */
export async function runVerb(request: PluginRequest, deps: PluginDeps): Promise<Record<string, unknown> | undefined> {
  const { command } = request.env;
  if (command === "VERSION") throw new Error("VERSION is answered before the config is read");
  if ((command === "STATUS" || command === "GC") && compareVersions(request.conf.cniVersion, "1.1.0") < 0) {
    throw new CniError(ErrorCode.incompatibleVersion, `${command} needs cniVersion 1.1.0 or later, config has ${request.conf.cniVersion}`);
  }
  return (await handlers[command]())(request, deps);
}

/**
 * The plugin's whole contract with the runtime: env and stdin in; a result or nothing
 * on stdout with exit 0, or the CNI error object on stdout with exit 1. Logs go to
 * stderr and the netconf's log_file.
 */
export async function runPlugin(env: NodeJS.ProcessEnv): Promise<number> {
  let stdin = "";
  let log = createLogger({ prefix: { command: env.CNI_COMMAND, containerId: env.CNI_CONTAINERID } });
  // What maps every failure to its CNI code knows every layer's errors: loaded only on failure.
  const fail = async (error: unknown) => {
    const { toCniError } = await import("./failure.js");
    const cniError = toCniError(error);
    log.error(cniError.message, { code: cniError.code, ...(cniError.details ? { details: cniError.details } : {}) });
    if (error !== cniError && error instanceof Error) log.debug("failure's stack", { stack: error.stack });
    print(cniError.toJSON(errorVersion(stdin)));
    return 1;
  };
  try {
    stdin = await readStdin();
    const cniEnv = readCniEnv(env);
    if (cniEnv.command === "VERSION") {
      print(versionInfo(errorVersion(stdin)));
      return 0;
    }
    // Bounds the whole verb; whatever was midway stays recorded as such (an "adding" record), the runtime's DEL follows.
    const watch = (budgetMs: number) =>
      startWatchdog(budgetMs, () => {
        void fail(new CniError(ErrorCode.tryAgainLater, `meshcni did not finish ${cniEnv.command} within ${budgetMs / 1000} s`)).then(
          (code) => process.exit(code),
        );
      });
    /** The logger the netconf asks for, from then on. */
    const logFor = (level: LogLevel, file: string | undefined) => {
      log = createLogger({
        level,
        ...(file ? { file } : {}),
        prefix: { command: cniEnv.command, containerId: cniEnv.containerId || undefined },
      });
      return log;
    };
    const head = headOf(stdin);
    if (head.probe === true) {
      const output = probeAnswer(head, cniEnv.command);
      if (output) print(output);
      return 0;
    }
    // ADD and DEL through the agent: it decides ADD, with the plugin's code, and writes both; this process only asks.
    const named = head.agent_socket;
    const socket = (cniEnv.command === "ADD" || cniEnv.command === "DEL") && typeof named === "string" && named !== "" ? named : undefined;
    if (socket) {
      const disarm = watch(watchdogSlackMs);
      if (cniEnv.command === "DEL") {
        if (await removeThroughAgent(stdin, cniEnv, socket, log).finally(disarm)) return 0;
      } else {
        const output = await addThroughAgent(stdin, cniEnv, socket, log, logFor).finally(disarm);
        if (output) {
          print(output);
          return 0;
        }
      }
    }
    // VERSION needs none of this: the netconf's schema is loaded when a verb reads one.
    const { parseNetConf } = await import("../mesh/netconf.js");
    // The agent could not decide: it is not asked again.
    const conf = { ...parseNetConf(stdin), ...(socket ? { agent_socket: undefined } : {}) };
    logFor(conf.log_level, conf.log_file);
    const started = performance.now();
    const disarm = watch(conf.kubernetes.timeout_seconds * 1000 + watchdogSlackMs);
    const { productionDeps } = await import("./deps.js");
    const output = await runVerb({ env: cniEnv, conf }, productionDeps(log)).finally(disarm);
    log.debug("done", { ms: Math.round(performance.now() - started) });
    if (output !== undefined) print(output);
    return 0;
  } catch (error) {
    return fail(error);
  }
}
