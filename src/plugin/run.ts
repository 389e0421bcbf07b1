import { readFileSync } from "node:fs";
import { readCniEnv } from "../cni/env.js";
import { asCniError, CniError, ErrorCode } from "../cni/errors.js";
import { compareVersions, isSupportedVersion, latestVersion, versionInfo } from "../cni/version.js";
import { resolveBackend } from "../iptables/backend.js";
import { createIptablesRunner, hostSaveProbe } from "../iptables/exec.js";
import { createLogger, type Logger } from "../log.js";
import { inNetns } from "../netns/enter.js";
import { add } from "./add.js";
import { check } from "./check.js";
import { del } from "./del.js";
import { gc } from "./gc.js";
import { parseNetConf } from "./netconf.js";
import { detectionCache } from "./records.js";
import type { PluginDeps, PluginRequest } from "./request.js";
import { status } from "./status.js";

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

function productionDeps(log: Logger): PluginDeps {
  return {
    log,
    // Loaded only by the verbs that call the API: it is most of the bundle.
    kubeReader: async (options) => (await import("../kube/client.js")).createKubeReader(options),
    iptables: async (conf) =>
      createIptablesRunner(await resolveBackend(conf.linkerd["iptables-mode"], hostSaveProbe, detectionCache(conf.state_dir)), {
        wait: conf.linkerd["use-wait-flag"],
      }),
    inNetns,
  };
}

async function runVerb(request: PluginRequest, log: Logger): Promise<unknown> {
  const { command } = request.env;
  if ((command === "STATUS" || command === "GC") && compareVersions(request.conf.cniVersion, "1.1.0") < 0) {
    throw new CniError(ErrorCode.incompatibleVersion, `${command} needs cniVersion 1.1.0 or later, config has ${request.conf.cniVersion}`);
  }
  const deps = productionDeps(log);
  switch (command) {
    case "ADD":
      return add(request, deps);
    case "CHECK":
      return check(request, deps);
    case "DEL":
      return del(request, deps);
    case "STATUS":
      return status(request);
    case "GC":
      return gc(request, log);
    case "VERSION":
      throw new Error("VERSION is answered before the config is read");
  }
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
    const output = await runVerb({ env: cniEnv, conf }, log);
    log.debug("done", { ms: Math.round(performance.now() - started) });
    if (output !== undefined) process.stdout.write(`${JSON.stringify(output)}\n`);
    return 0;
  } catch (error) {
    const cniError = asCniError(error);
    log.error(cniError.message, { code: cniError.code, ...(error instanceof CniError ? {} : { stack: (error as Error)?.stack }) });
    process.stdout.write(`${JSON.stringify(cniError.toJSON(errorVersion(stdin)))}\n`);
    return 1;
  }
}
