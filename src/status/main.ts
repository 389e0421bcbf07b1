import { CoreV1Api, type CoreV1Event } from "@kubernetes/client-node";
import { unprotectedLabel } from "../audit/repair.js";
import { errorMessage } from "../errors.js";
import { oneOf, parseFlags, timeoutFlag } from "../flags.js";
import { cliKubeConfig, operatorError, withDeadline } from "../kube/cli-access.js";
import { makeApiClient } from "../kube/transport.js";
import { clusterView, renderClusterView, unprotectedReasons } from "./view.js";

export const statusUsage = `meshcni status [options]   is any meshed pod in the cluster running without its redirect?

  --kubeconfig FILE         whose credentials (KUBECONFIG's files as kubectl merges them, then
                            ~/.kube/config, then in-cluster, by default); reads only: nodes, pods and events
  --context NAME            the kubeconfig's context to use (its current one)
  --output table|json       (table)
  --timeout SECONDS         give up on the API server after this long (30)

Lists every node's MeshcniReady condition (as its agent keeps it: ready, why not, the
version, its meshed pods by status) and every meshed pod an agent reports without its
redirect (those the condition names, and those the label repair labelled), each with its
newest meshcni Event.
Exit 0 when no meshed pod is reported without its redirect; 1 when one is; 2 on a usage or
API error.
`;

/** `meshcni status`: the cluster as meshcni's agents report it, read-only. */
export async function runStatus(argv: string[]): Promise<number> {
  let values: { kubeconfig?: string; context?: string; output: string; timeout: string };
  let output: "table" | "json";
  let timeoutSeconds: number;
  try {
    ({ values } = parseFlags({
      args: argv,
      options: {
        kubeconfig: { type: "string" },
        context: { type: "string" },
        output: { type: "string", default: "table" },
        timeout: { type: "string", default: "30" },
      },
    }));
    output = oneOf("output", values.output, ["table", "json"] as const);
    timeoutSeconds = timeoutFlag(values.timeout);
  } catch (error) {
    process.stderr.write(`meshcni status: ${errorMessage(error)} (see meshcni status --help)\n`);
    return 2;
  }
  return withDeadline(timeoutSeconds, async (signal) => {
    try {
      const { config, target } = cliKubeConfig(values, process.env, signal);
      const api = makeApiClient(config, CoreV1Api);
      const explain = operatorError(target, timeoutSeconds, "list on nodes, pods and events in every namespace");
      const read = <T>(request: Promise<T>) =>
        request.catch((error: unknown) => {
          throw explain(error);
        });
      const [nodes, labelled, ...eventLists] = await Promise.all([
        read(api.listNode()),
        read(api.listPodForAllNamespaces({ labelSelector: `${unprotectedLabel}=true` })),
        ...unprotectedReasons.map((reason) =>
          read(api.listEventForAllNamespaces({ fieldSelector: `involvedObject.kind=Pod,reason=${reason}` })),
        ),
      ]);
      const events: CoreV1Event[] = eventLists.flatMap((list) => list.items);
      const view = clusterView(nodes.items, labelled.items, events);
      process.stdout.write(output === "json" ? `${JSON.stringify(view, null, 2)}\n` : renderClusterView(view));
      return view.unprotected.length + view.unnamed.length > 0 ? 1 : 0;
    } catch (error) {
      process.stderr.write(`meshcni status: ${errorMessage(error)}\n`);
      return 2;
    }
  });
}
