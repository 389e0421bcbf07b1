import { errorMessage } from "../../errors.js";
import type { JsonObject } from "../../json.js";
import { parseNetConf } from "../../mesh/netconf.js";
import { inNetnsDirs } from "../../netns/paths.js";

/** The host paths the agent's writers write to: its own installed entry's, never a caller's. */
export interface WriteScope {
  stateDir: string;
  logFile: string | undefined;
  /** Where the runtime keeps pod netns (--netns-dir): the only netns the writers enter. */
  netnsDirs: string[];
}

/** The scope of the agent's writers from its own rendered entry; a reason when it is no netconf. */
export function writeScopeOf(entry: JsonObject, netnsDirs: string[]): WriteScope | { invalid: string } {
  try {
    const conf = parseNetConf(JSON.stringify({ cniVersion: "1.0.0", name: "meshcni", ...entry }));
    return { stateDir: conf.state_dir, logFile: conf.log_file, netnsDirs };
  } catch (error) {
    return { invalid: errorMessage(error) };
  }
}

/**
 * Why the agent's writer will not carry out a write a caller asked for, or undefined: a
 * state dir or log file other than its own (a caller on the socket must not have the
 * agent write or rotate a file of its choosing), a netns path outside the runtime's netns
 * dirs, or one not in its plainest form (`..` would leave them). The plugin, whose
 * netconf the runtime gave it, then writes itself.
 */
export function outsideScope(scope: WriteScope, ask: { stateDir: string; logFile: string | undefined; netns: string }): string | undefined {
  if (ask.stateDir !== scope.stateDir) return `the state dir ${ask.stateDir} is not the agent's own (${scope.stateDir})`;
  if (ask.logFile !== scope.logFile) return `the log file ${ask.logFile ?? "(none)"} is not the agent's own (${scope.logFile ?? "none"})`;
  if (ask.netns === "" || inNetnsDirs(ask.netns, scope.netnsDirs)) return undefined;
  return `the netns ${ask.netns} is not in the runtime's netns dirs (${scope.netnsDirs.join(", ")})`;
}
