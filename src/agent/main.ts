import { join } from "node:path";
import { errorMessage } from "../errors.js";
import { Installation } from "../installer/install.js";
import { createLogger } from "../log.js";
import { NodeAgent } from "./agent.js";
import { createAgentMetrics } from "./metrics.js";
import { type AgentOptions, parseAgentOptions } from "./options.js";
import { checkReadiness } from "./probes.js";
import { askReadyz, readyReport, readyzUrl } from "./ready.js";

function options(command: "install" | "ready" | "uninstall", argv: string[]): AgentOptions | undefined {
  try {
    return parseAgentOptions(argv, process.env, process.execPath);
  } catch (error) {
    process.stderr.write(`meshcni ${command}: ${errorMessage(error)} (see meshcni ${command} --help)\n`);
    return undefined;
  }
}

/**
 * `meshcni install`: runs until SIGTERM/SIGINT, then stops (uninstalling when the DaemonSet
 * is gone) and exits 0 at once: a request a hung API server never answers must not keep
 * the process past its stop.
 */
export async function runInstall(argv: string[]): Promise<number> {
  const parsed = options("install", argv);
  if (!parsed) return 2;
  const log = createLogger({ level: parsed.logLevel, prefix: { component: "install" } });
  const agent = new NodeAgent(parsed, log, createAgentMetrics(parsed.node));
  // Handlers first: a signal during start-up must still stop cleanly.
  // Handlers that stay installed (on, not once): a second signal during the stop is said, not
  // taken as the default (which would kill the agent mid-stop while a sweep runs).
  const stopped = new Promise<number>((resolve) => {
    let stopping = false;
    const shutdown = (signal: string) => {
      if (stopping) return log.info("already stopping", { signal });
      stopping = true;
      log.info("stopping", { signal });
      void agent.stop().then(() => resolve(0));
    };
    process.on("SIGTERM", () => shutdown("SIGTERM"));
    process.on("SIGINT", () => shutdown("SIGINT"));
  });
  try {
    await agent.start();
  } catch (error) {
    log.error(errorMessage(error));
    return 1;
  }
  return stopped.then((code) => process.exit(code));
}

/** `meshcni uninstall`: the agent's uninstall, once, by hand (see uninstallUsage). */
export function runUninstall(argv: string[]): number {
  const parsed = options("uninstall", argv);
  if (!parsed) return 2;
  try {
    const installation = new Installation(parsed.install, () => performance.now());
    const { changed, running } = installation.uninstall();
    for (const file of changed) process.stdout.write(`removed meshcni's entry from ${join(installation.paths.netDir, file)}\n`);
    if (running.length > 0) process.stdout.write(`pods still running keep their redirect until they end: ${running.join(", ")}\n`);
    process.stdout.write(`removed meshcni's kubeconfig, binary and state dir from ${parsed.install.hostRoot || "/"}\n`);
    return 0;
  } catch (error) {
    process.stderr.write(`meshcni uninstall: ${errorMessage(error)}\n`);
    return 1;
  }
}

/** `meshcni ready`: the agent's /readyz verdict (at --listen), with the reasons the disk shows from here. */
export async function runReady(argv: string[]): Promise<number> {
  const parsed = options("ready", argv);
  if (!parsed) return 2;
  const disk = checkReadiness(new Installation(parsed.install, () => performance.now()), parsed.serviceAccountDir);
  const url = parsed.listen && readyzUrl(parsed.listen);
  const { ready, text } = readyReport(url ? await askReadyz(url) : undefined, disk, url ?? "");
  process.stdout.write(`${text}\n`);
  return ready ? 0 : 1;
}
