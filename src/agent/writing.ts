import type { Template } from "../installer/template.js";
import { type Logger, SaidOnce } from "../log.js";
import type { AgentMetrics } from "./metrics.js";
import type { AgentOptions } from "./options.js";
import type { Writing } from "./plugin-server.js";
import { writeScopeOf } from "./write-scope.js";
import type { WriterPool } from "./writer.js";

/**
 * How the agent writes for the plugin: its writers, kept to the scope of its own installed
 * netconf entry (`template`, as the installer rendered it: the same entry it chains), every outcome counted (meshcni_agent_writes_total). Undefined when that
 * entry is invalid: the plugin then writes everything itself.
 */
export function agentWriting(
  options: AgentOptions,
  template: Template,
  writer: WriterPool,
  log: Logger,
  metrics: AgentMetrics,
): Writing | undefined {
  const scope = template.ok ? writeScopeOf(template.entry, options.sweep.netnsDirs) : { invalid: template.reason };
  if ("invalid" in scope) {
    log.error("the agent does not write for the plugin: its own netconf entry is invalid", { reason: scope.invalid });
    return undefined;
  }
  const said = new SaidOnce();
  return {
    hostRoot: options.install.hostRoot,
    scope,
    write: async (ask, deadline) => {
      const outcome = await writer.write(ask, deadline);
      metrics.writes.inc({ verb: ask.verb, result: "done" in outcome ? "done" : "handed_back" });
      return outcome;
    },
    handBack(verb, reason) {
      metrics.writes.inc({ verb, result: "handed_back" });
      // A netconf of another chain (Multus) would otherwise say the same at every pod start.
      if (said.first(reason))
        log.warn("the plugin writes itself: the agent does not write outside its own netconf's paths", { verb, reason });
    },
  };
}
