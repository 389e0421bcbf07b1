import { existsSync } from "node:fs";
import { connectRuntime, type PodRuntime } from "../../cri/runtime.js";
import { criSocketOf } from "../../cri/sockets.js";
import { errorMessage } from "../../errors.js";
import { hostPaths } from "../../host.js";
import { NetnsClaims } from "./netns-claims.js";

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

/** Why an ADD's netns is not its pod's, or undefined when the agent may write there. */
export type NetnsTie = (
  pod: { namespace: string; name: string; uid: string },
  containerId: string,
  netns: string,
) => Promise<string | undefined>;

/**
 * The agent's check, through the runtime's CRI socket (connected at the agent's start,
 * kept), that an ADD's netns is its pod's: the pod runs in no other (untiedNetns), and no
 * other pod's attachment holds it, by a record of the node's (`recordsDir`) whose sandbox
 * the runtime has ready in that very netns (a record alone, a file on the disk, locks no pod
 * out: a caller racing a new sandbox with a record of its own is not believed). No check
 * while the node has no runtime's socket (`--cri-socket auto` finding none), looked for
 * again at each ADD until one is there: a runtime starting after the agent is asked from
 * then on. A runtime that cannot answer leaves the write to the plugin, saying why.
 */
export function netnsTie(criSocket: string, hostRoot: string, recordsDir: () => string): NetnsTie {
  const onHost = hostPaths(hostRoot);
  const connect = () => {
    const socket = criSocketOf(criSocket, (path) => existsSync(onHost(path)));
    const made = socket === undefined ? undefined : connectRuntime(onHost(socket), tieDeadlineMs);
    made?.catch(() => undefined);
    return made;
  };
  // Connected now: the client's modules load at the agent's start, not in a pod's start.
  let runtime: Promise<PodRuntime> | undefined = connect();
  const claims = new NetnsClaims(recordsDir);
  return async (pod, containerId, netns) => {
    runtime ??= connect();
    const mine = runtime;
    if (mine === undefined) return undefined;
    try {
      const client = await mine;
      const deadline = Date.now() + tieDeadlineMs;
      const untied = untiedNetns(`${pod.namespace}/${pod.name}`, await client.readySandboxesOf(pod.uid, deadline), containerId, netns);
      if (untied) return untied;
      for (const other of claims.of(netns).filter((claim) => claim.uid !== pod.uid && claim.containerId !== containerId))
        if ((await client.readyNetnsOf(other.containerId, deadline)) === netns)
          return `netns ${netns} is another pod's (uid ${other.uid}): the container runtime has its sandbox ${other.containerId} ready there`;
      return undefined;
    } catch (error) {
      // A client that could not be made is made anew by the next ADD; a made one reconnects by itself (gRPC), so stays.
      const made = await mine.then(
        () => true,
        () => false,
      );
      if (!made && runtime === mine) runtime = undefined;
      return `the container runtime could not confirm the netns is the pod's: ${errorMessage(error)}`;
    }
  };
}
