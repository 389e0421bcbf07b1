import type { DecidedSettings } from "../agent-socket.js";
import { type NetConf, parseNetConf } from "../mesh/netconf.js";

/** What applying a decision takes of a netconf: where root writes (state dir, log file), how (backend, wait), whether at all. */
export function settingsOf(conf: NetConf): DecidedSettings {
  return {
    stateDir: conf.state_dir,
    mode: conf.linkerd["iptables-mode"],
    wait: conf.linkerd["use-wait-flag"],
    simulate: conf.linkerd.simulate,
    logLevel: conf.log_level,
    ...(conf.log_file ? { logFile: conf.log_file } : {}),
  };
}

/** The settings of the plugin's own netconf (its stdin), for a decision the agent made: never the answer's. */
export const decidedSettings = (stdin: string): DecidedSettings => settingsOf(parseNetConf(stdin));
