import { errorMessage } from "../errors.js";
import { createLogger } from "../log.js";
import { InstallAgent } from "./agent.js";
import { createInstallerMetrics } from "./metrics.js";
import { type InstallerOptions, parseInstallerOptions } from "./options.js";
import { checkReadiness } from "./readiness.js";
import { loadTemplate } from "./template.js";

function options(argv: string[]): InstallerOptions | undefined {
  try {
    return parseInstallerOptions(argv, process.env, process.execPath);
  } catch (error) {
    process.stderr.write(`meshcni install: ${errorMessage(error)} (see meshcni install --help)\n`);
    return undefined;
  }
}

/** `meshcni install`: runs until SIGTERM/SIGINT, then stops (uninstalling when the DaemonSet is gone) and exits 0. */
export async function runInstall(argv: string[]): Promise<number> {
  const parsed = options(argv);
  if (!parsed) return 2;
  const log = createLogger({ level: process.env.LOG_LEVEL === "debug" ? "debug" : "info", prefix: { component: "install" } });
  const agent = new InstallAgent(parsed, log, createInstallerMetrics());
  // Handlers first: a signal during start-up must still stop cleanly.
  const stopped = new Promise<number>((resolve) => {
    const shutdown = (signal: string) => {
      log.info("stopping", { signal });
      void agent.stop().then(() => resolve(0));
    };
    process.once("SIGTERM", () => shutdown("SIGTERM"));
    process.once("SIGINT", () => shutdown("SIGINT"));
  });
  await agent.start();
  return stopped;
}

/** `meshcni ready`: an exec readiness probe reading the same facts as /readyz. */
export function runReady(argv: string[]): number {
  const parsed = options(argv);
  if (!parsed) return 2;
  const readiness = checkReadiness(parsed, loadTemplate(parsed));
  process.stdout.write(
    readiness.ready ? `ready: meshcni is chained in ${readiness.active}\n` : `not ready: ${readiness.reasons.join("; ")}\n`,
  );
  return readiness.ready ? 0 : 1;
}
