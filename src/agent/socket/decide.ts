import { type AgentAnswer, type AgentAsk, AgentUnavailableError, type DecideAsk } from "../../agent-socket.js";
import { convertResult } from "../../cni/result.js";
import { answersReader } from "../../kube/agent-reader.js";
import type { Logger } from "../../log.js";
import { parseNetConf } from "../../mesh/netconf.js";
import { toCniError } from "../../plugin/failure.js";
import { decidePod } from "../../plugin/lookup.js";
import { familiesFor } from "../../plugin/request.js";
import { settingsOf } from "../../plugin/settings.js";
import { podKeyOf } from "../../pod-key.js";
import { planRules } from "../../redirect/plan.js";

/**
 * ADD's decision for the plugin, with the plugin's own code: the netconf parsed and checked,
 * the pod (its namespace, the `kubernetes` Service) read from the caches or the API, the
 * rules planned for the families the primary CNI gave it, the result to print. Its own
 * answers are checked as the plugin checks them. A netconf or pod that fails the decision
 * is refused with the CNI error the plugin would give; what the agent cannot read (the API
 * failing) leaves the plugin to ask the API itself.
 */
export async function decideForPlugin(ask: DecideAsk, answer: (ask: AgentAsk) => Promise<AgentAnswer>, log: Logger): Promise<AgentAnswer> {
  try {
    const conf = parseNetConf(ask.netconf);
    const identity = { namespace: ask.namespace, name: ask.name, ...(ask.uid ? { uid: ask.uid } : {}) };
    const reader = answersReader(answer, "(its own)", () => undefined);
    const { pod, spec } = await decidePod(
      conf.linkerd,
      identity,
      {
        ...reader,
        // The agent's reads are the API's: a Service it cannot read (none in the cluster, say) gets what the plugin
        // gives one it cannot read (linkerd-cni's fallback ports), rather than sending the plugin to read it again.
        readService: (namespace, name) =>
          reader.readService(namespace, name).catch((error: unknown) => {
            throw error instanceof AgentUnavailableError ? new Error(error.reason) : error;
          }),
      },
      log,
    );
    const key = podKeyOf(pod);
    log.debug("decided an ADD for the plugin", { pod: `${key.namespace}/${key.name}`, meshed: spec !== undefined });
    return {
      decided: {
        result: conf.prevResult ? convertResult(conf.prevResult, conf.cniVersion) : { cniVersion: conf.cniVersion },
        pod: { namespace: key.namespace, name: key.name, uid: key.uid ?? "" },
        plans: spec ? familiesFor(conf).map((family) => planRules(spec, family)) : [],
        settings: settingsOf(conf),
      },
    };
  } catch (error) {
    if (error instanceof AgentUnavailableError) return { error: `cannot read what the decision needs: ${error.reason}` };
    const refusal = toCniError(error);
    return { refused: { code: refusal.code, msg: refusal.message, details: refusal.details } };
  }
}
