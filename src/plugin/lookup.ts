import type { V1Pod } from "@kubernetes/client-node";
import { AgentUnavailableError } from "../agent-socket.js";
import { parseCniArgs, podIdentity } from "../cni/args.js";
import { errorMessage } from "../errors.js";
import { agentTimeoutMs } from "../kube/agent-connection.js";
import type { KubeReader } from "../kube/pod-reader.js";
import type { Logger } from "../log.js";
import type { LinkerdConf } from "../mesh/netconf.js";
import { firewallSpecFor, isControlPlane, isMeshed, needsNamespaceAnnotations, readApiServerPorts } from "../mesh/pod.js";
import { formatPodKey, type PodKey } from "../pod-key.js";
import type { FirewallSpec } from "../redirect/spec.js";
import type { PluginDeps, PluginRequest } from "./request.js";

export interface Decision {
  pod: V1Pod;
  /** Undefined when the pod is not meshed. */
  spec: FirewallSpec | undefined;
}

/** The pod could not be looked up, so its redirect cannot be decided: retrying may help. */
export class PodLookupError extends Error {
  constructor(
    readonly pod: PodKey,
    readonly reason: string,
  ) {
    super(`cannot decide the redirect for pod ${formatPodKey(pod)}: ${reason}`);
    this.name = "PodLookupError";
  }
}

/** Bounds one API request, so a retry still fits within the deadline. */
const attemptTimeoutMs = 10_000;

/** The pod CNI_ARGS name; undefined (logged) for a container that is no Kubernetes pod. */
export function namedPod(request: PluginRequest, deps: PluginDeps): PodKey | undefined {
  const identity = podIdentity(parseCniArgs(request.env.args));
  if (!identity) deps.log.info("no K8S_POD_NAMESPACE/K8S_POD_NAME in CNI_ARGS: not a Kubernetes pod, passing through");
  return identity;
}

/**
 * Looks the pod up and decides its firewall: from the agent on the same node (its socket
 * in the netconf), else, when the agent cannot answer, from the API server. Any API
 * failure, and any answer that is not the pod asked for, fails closed: a meshed pod must
 * never start unredirected.
 */
export async function lookupPod(request: PluginRequest, deps: PluginDeps, identity: PodKey): Promise<Decision> {
  const socket = request.conf.agent_socket;
  if (socket) {
    try {
      return await decidePod(request.conf.linkerd, identity, await deps.agentReader(socket, agentTimeoutMs), deps.log);
    } catch (error) {
      if (!(error instanceof AgentUnavailableError)) throw error;
      deps.log.warn("asking the API server instead of the agent", { pod: formatPodKey(identity), reason: error.message });
    }
  }
  const { kubeconfig, timeout_seconds } = request.conf.kubernetes;
  const deadline = AbortSignal.timeout(timeout_seconds * 1000);
  let reader: KubeReader;
  try {
    reader = await deps.kubeReader({
      kubeconfig,
      deadline,
      attemptTimeoutMs: Math.min(attemptTimeoutMs, timeout_seconds * 1000),
      onRetry: (attempt, cause) => deps.log.warn("API request failed, retrying", { pod: formatPodKey(identity), attempt, cause }),
    });
  } catch (error) {
    throw new PodLookupError(identity, errorMessage(error));
  }
  return decidePod(request.conf.linkerd, identity, reader, deps.log);
}

/**
 * Reads the pod (and, for overrides, its namespace) through `reader` and decides; an agent
 * that stops answering passes through. The agent decides with it too (a `decision` ask).
 */
export async function decidePod(linkerd: LinkerdConf, identity: PodKey, reader: KubeReader, log: Logger): Promise<Decision> {
  const subject = formatPodKey(identity);
  const read = async <T>(what: string, call: () => Promise<T>) => {
    try {
      return await call();
    } catch (error) {
      if (error instanceof AgentUnavailableError) throw error;
      throw new PodLookupError(identity, `reading ${what}: ${errorMessage(error)}`);
    }
  };
  try {
    const pod = await read(`pod ${subject}`, () => reader.readPod(identity.namespace, identity.name, identity.uid));
    // A pod recreated under the same name is another pod: its spec says nothing of this sandbox.
    if (identity.uid && pod.metadata?.uid !== identity.uid) {
      throw new PodLookupError(
        identity,
        `the API server has pod UID ${pod.metadata?.uid ?? "(none)"}, the runtime asked for ${identity.uid}`,
      );
    }
    if (!isMeshed(pod)) return { pod, spec: undefined };
    const namespace = needsNamespaceAnnotations(pod)
      ? await read(`namespace ${identity.namespace}`, () => reader.readNamespace(identity.namespace))
      : undefined;
    const apiServerPorts = isControlPlane(pod)
      ? await readApiServerPorts(
          (namespace, name) => reader.readService(namespace, name),
          (error) => {
            if (error instanceof AgentUnavailableError) throw error;
            log.warn("cannot read the kubernetes Service: skipping 443 and 6443, as linkerd-cni does", {
              pod: subject,
              error: errorMessage(error),
            });
          },
        )
      : [];
    return { pod, spec: firewallSpecFor(linkerd, pod, namespace, apiServerPorts) };
  } finally {
    reader.close();
  }
}
