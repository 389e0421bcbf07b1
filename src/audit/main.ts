import { hostname } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { errorMessage } from "../errors.js";
import { createNodeApi, kubeConfigFrom } from "../kube/node-api.js";
import { podName } from "../pod-key.js";
import { defaultStateDir, fileRecordStore } from "../state/records.js";
import { auditPods } from "./classify.js";
import { renderTable, report } from "./format.js";
import { inspectRecord } from "./inspect.js";

export const auditUsage = `meshcni audit [options]   list this node's meshed pods and whether meshcni protects them

  --node NAME          the node [NODE_NAME] (this host's name)
  --output FORMAT      table or json (table)
  --kubeconfig PATH    API access [KUBECONFIG] (else in-cluster)
  --host-root DIR      where the host's filesystem is mounted [CONTAINER_MOUNT_PREFIX] ("")
  --state-dir DIR      the plugin's state_dir on the host (${defaultStateDir})
  --pod NAMESPACE/NAME only this pod (repeatable); all of the node's by default

Statuses: protected (ADD record and rules as planned), missing (no record: started
without meshcni), drifted (rules differ from the plan: listed), unknown (netns gone).
Exit 0 only when every meshed pod is protected; 1 otherwise; 2 on a usage or API error.
`;

function parseAuditArgs(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    options: {
      node: { type: "string" },
      output: { type: "string", default: "table" },
      kubeconfig: { type: "string" },
      "host-root": { type: "string" },
      "state-dir": { type: "string" },
      pod: { type: "string", multiple: true },
      help: { type: "boolean" },
    },
  });
  if (values.output !== "table" && values.output !== "json")
    throw new Error(`--output must be table or json, not ${JSON.stringify(values.output)}`);
  return values;
}

export async function runAudit(argv: string[]): Promise<number> {
  let values: ReturnType<typeof parseAuditArgs>;
  try {
    values = parseAuditArgs(argv);
  } catch (error) {
    process.stderr.write(`meshcni audit: ${errorMessage(error)}\n\n${auditUsage}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(auditUsage);
    return 0;
  }
  const node = values.node ?? process.env.NODE_NAME ?? hostname();
  const hostRoot = values["host-root"] ?? process.env.CONTAINER_MOUNT_PREFIX ?? "";
  try {
    const api = createNodeApi(kubeConfigFrom(values.kubeconfig ?? process.env.KUBECONFIG), node);
    const only = new Set(values.pod ?? []);
    const pods = (await api.listPods()).filter((pod) => only.size === 0 || only.has(podName(pod)));
    const stateDir = join(hostRoot || "/", values["state-dir"] ?? defaultStateDir);
    const audits = await auditPods(pods, fileRecordStore(stateDir).list(), (record) => inspectRecord(record, hostRoot, stateDir));
    const result = report(node, audits);
    process.stdout.write(values.output === "json" ? `${JSON.stringify(result, null, 2)}\n` : renderTable(result));
    return audits.some((audit) => audit.status !== "protected") ? 1 : 0;
  } catch (error) {
    process.stderr.write(`meshcni audit: ${errorMessage(error)}\n`);
    return 2;
  }
}
