import { parseArgs } from "node:util";
import { errorMessage } from "../errors.js";
import { oneOf } from "../flags.js";
import { parsePodKey } from "../pod-key.js";
import { renderTable } from "./format.js";
import { hostFlags, hostFlagsUsage, hostIo, hostValues } from "./host.js";
import { repairPolicies } from "./repair.js";
import { allProtected, sweep } from "./sweep.js";

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
  const { values } = parseArgs({
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
  const maxEvictions = Number(values["max-evictions"]);
  if (!Number.isInteger(maxEvictions) || maxEvictions < 0)
    throw new Error(`--max-evictions must be a whole number, not ${JSON.stringify(values["max-evictions"])}`);
  for (const pod of values.pod) if (!parsePodKey(pod)) throw new Error(`--pod must be NAMESPACE/NAME, not ${JSON.stringify(pod)}`);
  return { ...values, host: hostValues(values), repair, maxEvictions };
}

export async function runAudit(argv: string[]): Promise<number> {
  let values: ReturnType<typeof parseAuditArgs>;
  try {
    values = parseAuditArgs(argv);
  } catch (error) {
    process.stderr.write(`meshcni audit: ${errorMessage(error)} (see meshcni audit --help)\n`);
    return 2;
  }
  try {
    const report = await sweep(
      {
        node: values.host.node,
        only: new Set(values.pod),
        policy: values.repair,
        limits: {
          self:
            process.env.POD_NAMESPACE && process.env.POD_NAME
              ? { namespace: process.env.POD_NAMESPACE, name: process.env.POD_NAME }
              : undefined,
          excludeNamespaces: new Set(values["repair-exclude-namespaces"].split(",").filter(Boolean)),
          skipUids: new Set(values["skip-uid"]),
          evictionsLeft: values.maxEvictions,
        },
      },
      hostIo(values.host),
    );
    process.stdout.write(values.host.output === "json" ? `${JSON.stringify(report, null, 2)}\n` : renderTable(report));
    return allProtected(report) ? 0 : 1;
  } catch (error) {
    process.stderr.write(`meshcni audit: ${errorMessage(error)}\n`);
    return 2;
  }
}
