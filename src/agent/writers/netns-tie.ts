import { existsSync } from "node:fs";
import { connectRuntime, type PodRuntime } from "../../cri/runtime.js";
import { criSocketOf } from "../../cri/sockets.js";
import { errorMessage } from "../../errors.js";
import { hostPaths } from "../../host.js";

/** A pod's ready sandbox as the container runtime lists it. */
export interface ReadySandbox {
  sandbox: string;
  netns: string | undefined;
}

/**
 * Why the agent does not write a pod's plan into the netns an ADD passed, pure: the runtime
 * already runs the pod in a ready sandbox of another netns. The sandbox being set up is not
 * listed yet while its ADD runs (containerd and CRI-O add it after the network), so a pod
 * with no ready sandbox, or this one, is no finding; a caller naming a running pod while
 * passing another's netns is.
 */
export function untiedNetns(pod: string, sandboxes: ReadySandbox[], containerId: string, netns: string): string | undefined {
  const elsewhere = sandboxes.find((found) => found.sandbox !== containerId && found.netns !== netns);
  if (!elsewhere) return undefined;
  return `the container runtime runs pod ${pod} in sandbox ${elsewhere.sandbox} with netns ${elsewhere.netns ?? "(none named)"}, not ${netns}`;
}

/** What a check may spend asking the runtime: a pod start waits for it. */
const tieDeadlineMs = 500;

/**
 * The agent's check, through the runtime's CRI socket (connected at first use, kept), that
 * an ADD's netns is its pod's; undefined without a socket. A runtime that cannot answer
 * leaves the write to the plugin, saying why.
 */
export type NetnsTie = (
  pod: { namespace: string; name: string; uid: string },
  containerId: string,
  netns: string,
) => Promise<string | undefined>;

export function netnsTie(criSocket: string, hostRoot: string): NetnsTie | undefined {
  const onHost = hostPaths(hostRoot);
  const socket = criSocketOf(criSocket, (path) => existsSync(onHost(path)));
  if (socket === undefined) return undefined;
  const connect = () => connectRuntime(onHost(socket), tieDeadlineMs);
  // Connected now: the client's modules load at the agent's start, not in a pod's start.
  let runtime: Promise<PodRuntime> | undefined = connect();
  runtime.catch(() => undefined);
  return async (pod, containerId, netns) => {
    try {
      runtime ??= connect();
      const sandboxes = await (await runtime).readySandboxesOf(pod.uid, Date.now() + tieDeadlineMs);
      return untiedNetns(`${pod.namespace}/${pod.name}`, sandboxes, containerId, netns);
    } catch (error) {
      const failed = runtime;
      runtime = undefined;
      failed?.then(
        (client) => client.close(),
        () => undefined,
      );
      return `the container runtime could not confirm the netns is the pod's: ${errorMessage(error)}`;
    }
  };
}
