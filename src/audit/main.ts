import { errorMessage } from "../errors.js";
import { numberFlag, oneOf, parseFlags } from "../flags.js";
import { cliKubeConfig, operatorError, withDeadline } from "../kube/cli-access.js";
import { parsePodKey } from "../pod-key.js";
import type { SweepRequest } from "./contract.js";
import { hostFlags, hostFlagsUsage, hostIo, hostValues } from "./host.js";
import { repairPolicies } from "./repair.js";
import { runSweepOf } from "./sweep-main.js";

export const auditUsage = `meshcni audit [options]   judge this node's meshed pods by what their netns hold; repair them

${hostFlagsUsage}
  --pod NAMESPACE/NAME      only this pod (repeatable); all of the node's by default
  --repair POLICY           also act, once: ${repairPolicies.join(", ")}; without it nothing is changed
  --max-evictions N         with --repair evict: at most N evictions in this sweep (2)
  --repair-exclude-namespaces NS,NS   never act on pods of these namespaces
  --skip-uid UID            leave this pod alone (repeatable; the agent passes pods it acted on recently)

Statuses: protected (the recorded plan is in its netns), adopted (the plan is there but no
meshcni record: linkerd-cni or an earlier install set it up; a sweep records it), missing
(netns found, no redirect), drifted (rules differ: listed), unknown (no netns found, or no
plan can be made). With --repair, a sweep also records adopted pods, acts on missing and
drifted ones (an Event on each), and removes records whose pod or netns is gone.
Exit 0 when every meshed pod is protected or adopted (or redirected by this sweep); 1
otherwise; 2 on a usage or API error.
`;

function parseAuditArgs(argv: string[]) {
  const { values } = parseFlags({
    args: argv,
    options: {
      ...hostFlags,
      pod: { type: "string", multiple: true, default: [] },
      repair: { type: "string" },
      "max-evictions": { type: "string", default: "2" },
      "repair-exclude-namespaces": { type: "string", default: "" },
      "skip-uid": { type: "string", multiple: true, default: [] },
    },
  });
  const repair = values.repair === undefined ? undefined : oneOf("repair", values.repair, repairPolicies);
  const maxEvictions = numberFlag("max-evictions", values["max-evictions"], (n) => Number.isInteger(n) && n >= 0, "a whole number");
  for (const pod of values.pod) if (!parsePodKey(pod)) throw new Error(`--pod must be NAMESPACE/NAME, not ${JSON.stringify(pod)}`);
  return { ...values, host: hostValues(values), repair, maxEvictions };
}

/** `meshcni audit`: its flags as a sweep request, the report as a table or JSON. */
export async function runAudit(argv: string[]): Promise<number> {
  let values: ReturnType<typeof parseAuditArgs>;
  try {
    values = parseAuditArgs(argv);
  } catch (error) {
    process.stderr.write(`meshcni audit: ${errorMessage(error)} (see meshcni audit --help)\n`);
    return 2;
  }
  const { host } = values;
  const { POD_NAMESPACE: namespace, POD_NAME: name } = process.env;
  const request: SweepRequest = {
    node: host.node,
    pods: values.pod,
    policy: values.repair,
    limits: {
      excludeNamespaces: values["repair-exclude-namespaces"].split(",").filter(Boolean),
      skipUids: values["skip-uid"],
      evictionsLeft: values.maxEvictions,
    },
    ...(namespace && name ? { self: { namespace, name } } : {}),
    dirs: host.dirs,
  };
  return withDeadline(host.timeoutSeconds, (signal) => {
    const io = () => {
      const { config, target } = cliKubeConfig(host.access, process.env, signal);
      return hostIo(request, async () => config, operatorError(target, host.timeoutSeconds, auditNeeds));
    };
    return runSweepOf("audit", request, io, host.output);
  });
}

/** What the audit reads and writes, for a 403's message. */
const auditNeeds =
  "list and get on pods, get on namespaces and services; with --repair also create on events, patch on pods and create on pods/eviction";
