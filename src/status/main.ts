import { parseArgs } from "node:util";
import { CoreV1Api, type CoreV1Event } from "@kubernetes/client-node";
import { unprotectedLabel } from "../audit/repair.js";
import { errorMessage } from "../errors.js";
import { oneOf } from "../flags.js";
import { apiError } from "../kube/errors.js";
import { kubeConfigFrom } from "../kube/node-api.js";
import { clusterView, renderClusterView, unprotectedReasons } from "./view.js";

export const statusUsage = `meshcni status [options]   is any meshed pod in the cluster running without its redirect?

  --kubeconfig FILE         whose credentials (KUBECONFIG, then in-cluster, by default); reads only:
                            nodes, pods and events
  --output table|json       (table)

Lists every node's MeshcniReady condition (as its agent keeps it: ready, why not, the
version, its meshed pods by status) and every meshed pod an agent reports without its
redirect (those the condition names, and those the label repair labelled), each with its
newest meshcni Event.
Exit 0 when no meshed pod is reported without its redirect; 1 when one is; 2 on a usage or
API error.
`;

/** `meshcni status`: the cluster as meshcni's agents report it, read-only. */
export async function runStatus(argv: string[]): Promise<number> {
  let values: { kubeconfig?: string; output: string };
  let output: "table" | "json";
  try {
    ({ values } = parseArgs({
      args: argv,
      options: { kubeconfig: { type: "string" }, output: { type: "string", default: "table" } },
    }));
    output = oneOf("output", values.output, ["table", "json"] as const);
  } catch (error) {
    process.stderr.write(`meshcni status: ${errorMessage(error)} (see meshcni status --help)\n`);
    return 2;
  }
  try {
    const api = kubeConfigFrom(values.kubeconfig).makeApiClient(CoreV1Api);
    const [nodes, labelled, ...eventLists] = await Promise.all([
      api.listNode(),
      api.listPodForAllNamespaces({ labelSelector: `${unprotectedLabel}=true` }),
      ...unprotectedReasons.map((reason) => api.listEventForAllNamespaces({ fieldSelector: `involvedObject.kind=Pod,reason=${reason}` })),
    ]);
    const events: CoreV1Event[] = eventLists.flatMap((list) => list.items);
    const view = clusterView(nodes.items, labelled.items, events);
    process.stdout.write(output === "json" ? `${JSON.stringify(view, null, 2)}\n` : renderClusterView(view));
    return view.unprotected.length + view.unnamed.length > 0 ? 1 : 0;
  } catch (error) {
    process.stderr.write(`meshcni status: ${errorMessage(apiError(error))}\n`);
    return 2;
  }
}
