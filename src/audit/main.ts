import { readFileSync } from "node:fs";
import { KubeConfig } from "@kubernetes/client-node";
import { errorMessage } from "../errors.js";
import { numberFlag, oneOf, parseFlags } from "../flags.js";
import { cliKubeConfig, operatorError, withDeadline } from "../kube/cli-access.js";
import { parsePodKey } from "../pod-key.js";
import { parseSweepInput, type SweepInput, type SweepRequest } from "./contract.js";
import { renderTable } from "./format.js";
import { hostFlags, hostFlagsUsage, hostIo, hostValues } from "./host.js";
import { repairPolicies } from "./repair.js";
import { allProtected, type SweepIo, sweep } from "./sweep.js";

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

export const sweepUsage = `meshcni sweep   one audit and repair pass, as the node agent runs it (its child process)

Reads one JSON object on stdin: {"kubeconfig": "<the agent's kubeconfig>", "request": {...}},
the request holding the node, the pods, the repair policy and limits, the agent's own pod
and the host's dirs (what meshcni audit's flags say). Writes the sweep's report as JSON.
Exit codes as meshcni audit's; 2 when the input is not a request.
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
      return hostIo(request, config, operatorError(target, host.timeoutSeconds, auditNeeds));
    };
    return runSweepOf("audit", request, io, host.output);
  });
}

/** What the audit reads and writes, for a 403's message. */
const auditNeeds =
  "list and get on pods, get on namespaces and services; with --repair also create on events, patch on pods and create on pods/eviction";

/** `meshcni sweep`, the agent's child: a request and the agent's kubeconfig on stdin (checked), the report as JSON on stdout. */
export async function runSweep(argv: string[]): Promise<number> {
  let input: SweepInput;
  try {
    if (argv.length > 0) throw new Error(`takes no arguments, only its input on stdin, not ${JSON.stringify(argv.join(" "))}`);
    input = parseSweepInput(readFileSync(0, "utf8"));
  } catch (error) {
    process.stderr.write(`meshcni sweep: ${errorMessage(error)}\n`);
    return 2;
  }
  const io = () => {
    const config = new KubeConfig();
    config.loadFromString(input.kubeconfig);
    return hostIo(input.request, config);
  };
  return runSweepOf("sweep", input.request, io, "json");
}

/** Runs one sweep on this host and prints its report. Exit 0 when the node ends it protected, 1 when not, 2 on an error. */
async function runSweepOf(command: string, request: SweepRequest, io: () => SweepIo, output: "table" | "json"): Promise<number> {
  try {
    const report = await sweep(request, io());
    process.stdout.write(output === "json" ? `${JSON.stringify(report, null, 2)}\n` : renderTable(report));
    return allProtected(report) ? 0 : 1;
  } catch (error) {
    process.stderr.write(`meshcni ${command}: ${errorMessage(error)}\n`);
    return 2;
  }
}
