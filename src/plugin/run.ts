import { readFileSync } from "node:fs";
import { readCniEnv, type Verb } from "../cni/env.js";
import { CniError, ErrorCode } from "../cni/errors.js";
import { compareVersions, isSupportedVersion, latestVersion, versionInfo } from "../cni/version.js";
import { createLogger } from "../log.js";
import { parseNetConf } from "../mesh/netconf.js";
import { add } from "./add.js";
import { check } from "./check.js";
import { del } from "./del.js";
import { productionDeps } from "./deps.js";
import { toCniError } from "./failure.js";
import { gc } from "./gc.js";
import type { PluginDeps, PluginRequest, VerbHandler } from "./request.js";
import { status } from "./status.js";

/** The verbs that read a netconf; VERSION is answered before one is read. */
const handlers: Record<Exclude<Verb, "VERSION">, VerbHandler> = { ADD: add, CHECK: check, DEL: del, STATUS: status, GC: gc };

function readStdin(): string {
  try {
    return readFileSync(0, "utf8");
  } catch {
    return "";
  }
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
  return handlers[command](request, deps);
}

/**
 * The plugin's whole contract with the runtime: env and stdin in; a result or nothing
 * on stdout with exit 0, or the CNI error object on stdout with exit 1. Logs go to
 * stderr and the netconf's log_file.
 */
export async function runPlugin(env: NodeJS.ProcessEnv): Promise<number> {
  const stdin = readStdin();
  let log = createLogger({ prefix: { command: env.CNI_COMMAND, containerId: env.CNI_CONTAINERID } });
  try {
    const cniEnv = readCniEnv(env);
    if (cniEnv.command === "VERSION") {
      process.stdout.write(`${JSON.stringify(versionInfo(errorVersion(stdin)))}\n`);
      return 0;
    }
    const conf = parseNetConf(stdin);
    log = createLogger({
      level: conf.log_level,
      ...(conf.log_file ? { file: conf.log_file } : {}),
      prefix: { command: cniEnv.command, containerId: cniEnv.containerId || undefined },
    });
    const started = performance.now();
    const output = await runVerb({ env: cniEnv, conf }, productionDeps(log));
    log.debug("done", { ms: Math.round(performance.now() - started) });
    if (output !== undefined) process.stdout.write(`${JSON.stringify(output)}\n`);
    return 0;
  } catch (error) {
    const cniError = toCniError(error);
    log.error(cniError.message, { code: cniError.code, ...(cniError.details ? { details: cniError.details } : {}) });
    if (error !== cniError && error instanceof Error) log.debug("failure's stack", { stack: error.stack });
    process.stdout.write(`${JSON.stringify(cniError.toJSON(errorVersion(stdin)))}\n`);
    return 1;
  }
}
