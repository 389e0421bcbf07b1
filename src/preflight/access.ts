import { criSockets } from "../cri/sockets.js";
import type { CheckResult } from "./result.js";

/** The state dir, as proveStateDir found it: `refused` says why ADD could not keep its records there. */
export type StateDirFact = { path: string; exists: boolean; refused?: string };

/** The CRI socket (--cri-socket), as askCri found it: its pod sandboxes, or the problem. */
export type CriFact = { flag: string; socket?: string; sandboxes?: number; problem?: string };

/** The checks of what meshcni writes to and asks on the node: the state dir, the runtime's CRI socket. Pure. */
export function accessChecks(stateDir: StateDirFact, cri: CriFact, runtime: string | undefined): CheckResult[] {
  const results: CheckResult[] = [
    stateDir.refused
      ? {
          check: "state dir",
          level: "fail",
          message: `${stateDir.path}: ${stateDir.refused}; ADD records each meshed pod there: give the plugin a state_dir it can write (a tmpfs such as /var/run)`,
        }
      : {
          check: "state dir",
          level: "ok",
          message: `${stateDir.path} ${stateDir.exists ? "holds" : "can be created and hold"} ADD's records (a dir and a file made there, and removed)`,
        },
  ];
  const crio = runtime === "cri-o" ? " (CRI-O: /var/run/crio/crio.sock)" : "";
  if (cri.flag === "")
    results.push({
      check: "CRI socket",
      level: "warn",
      message: `none given: the audit places pods without an ADD record by IP only, and never acts on them`,
    });
  else if (cri.sandboxes !== undefined)
    results.push({ check: "CRI socket", level: "ok", message: `${cri.socket} answers the CRI: ${cri.sandboxes} pod sandboxes` });
  else
    results.push({
      check: "CRI socket",
      level: "warn",
      message: `${cri.socket ?? criSockets.join(" or ")}: ${cri.problem}; the audit asks the runtime which netns is whose: give the runtime's with --cri-socket${crio}, and the same to meshcni manifests --cri-socket`,
    });
  return results;
}
