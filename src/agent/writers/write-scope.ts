import { errorMessage } from "../../errors.js";
import type { JsonObject } from "../../json.js";
import { type LinkerdConf, parseNetConf } from "../../mesh/netconf.js";
import { inNetnsDirs } from "../../netns/paths.js";

/** What the agent's writers write: its own installed entry's paths and redirect, never a caller's. */
export interface WriteScope {
  stateDir: string;
  logFile: string | undefined;
  /** Where the runtime keeps pod netns (--netns-dir): the only netns the writers enter. */
  netnsDirs: string[];
  /** The entry's redirect settings (ports, ignore lists, UIDs, mode): the only ones the writers write. */
  linkerd: LinkerdConf;
}

/** The scope of the agent's writers from its own rendered entry; a reason when it is no netconf. */
export function writeScopeOf(entry: JsonObject, netnsDirs: string[]): WriteScope | { invalid: string } {
  try {
    const conf = parseNetConf(JSON.stringify({ cniVersion: "1.0.0", name: "meshcni", ...entry }));
    return { stateDir: conf.state_dir, logFile: conf.log_file, netnsDirs, linkerd: conf.linkerd };
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

/**
 * Why the agent's writer will not write an ADD's redirect a caller planned, or undefined: the
 * caller's netconf asks for settings other than the agent's own entry's (a port let through,
 * another proxy UID). The runtime calls the plugin with the entry the agent installed, so only
 * a caller of its own making differs: the plugin, which a caller without the pod's netns cannot
 * make write there, then decides and writes alone.
 */
export function otherRedirect(scope: WriteScope, linkerd: LinkerdConf): string | undefined {
  // Named by key alone: the caller's values are its own words, not for the agent's log.
  const keys = Object.keys({ ...scope.linkerd, ...linkerd }) as Array<keyof LinkerdConf>;
  const differ = keys.filter((key) => JSON.stringify(scope.linkerd[key]) !== JSON.stringify(linkerd[key]));
  return differ.length > 0 ? `its ${differ.join(", ")} differ from the agent's own entry` : undefined;
}
