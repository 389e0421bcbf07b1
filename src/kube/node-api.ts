import {
  AdmissionregistrationV1Api,
  AppsV1Api,
  CoreV1Api,
  type CoreV1Event,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1Namespace,
  type V1NodeCondition,
  type V1Pod,
  type V1Service,
  type V1Taint,
} from "@kubernetes/client-node";
import { ApiStatusError, apiError } from "./errors.js";
import { type Mint, TokenMinter } from "./token-request.js";
import { makeApiClient } from "./transport.js";

/** What audit and the agent's repair do with the API, for the pods of one node. Its failures are ApiStatusErrors: the Status's words. */
export interface NodeApi {
  listPods(): Promise<V1Pod[]>;
  readPod(namespace: string, name: string): Promise<V1Pod>;
  /**
   * A token of a ServiceAccount (TokenRequest), asked valid for `seconds`: what the agent
   * writes into the plugin's kubeconfig instead of its own. Its life is the server's grant
   * on the server's clock (the expiry less the answer's Date), whatever this node's clock says.
   */
  mintToken(namespace: string, serviceAccount: string, seconds: number): Promise<Mint>;
  /** An Event on the pod: why (reason), what meshcni did about it (action), and what to do (message). */
  createPodEvent(pod: V1Pod, event: { reason: string; action: string; message: string; type: "Normal" | "Warning" }): Promise<void>;
  labelPod(pod: V1Pod, key: string, value: string): Promise<void>;
  readNamespace(name: string): Promise<V1Namespace>;
  /** A Service (the `kubernetes` one, whose ports control-plane pods skip). */
  readService(namespace: string, name: string): Promise<V1Service>;
  /** One key of a ConfigMap as the API holds it now (a quorum read), with its resourceVersion; undefined: no such key. */
  readConfigMapKey(namespace: string, name: string, key: string): Promise<{ value: string | undefined; resourceVersion: string }>;
  /**
   * Asks the Eviction API to evict the pod (still the same pod: UID precondition), so its
   * PodDisruptionBudgets hold: "blocked" when one would be violated (429 with a
   * DisruptionBudget cause), `throttled` with the wait the server asked for (429 without
   * one: API Priority and Fairness). Any other refusal throws its ApiStatusError (a 500:
   * several budgets match the pod, which eviction does not support).
   */
  evictPod(pod: V1Pod): Promise<"evicted" | "blocked" | { throttledMs: number }>;
  /** The DaemonSet owning this pod (null: none owns it) and the ServiceAccount it runs as. Any failure throws, a 404 included. */
  ownersOf(namespace: string, podName: string): Promise<PodOwners>;
  /**
   * A DaemonSet by name: "present", "deleted" (gone or being deleted) or "denied" (401/403:
   * its ServiceAccount or permissions are gone). Any other failure throws.
   */
  daemonSetState(namespace: string, name: string): Promise<DaemonSetState>;
  nodeTaints(): Promise<{ taints: V1Taint[]; resourceVersion: string }>;
  /** Replaces the node's taints if the node has not changed since resourceVersion. */
  setNodeTaints(taints: V1Taint[], resourceVersion: string): Promise<void>;
  /** Sets one condition on the node's status (a strategic merge by type: the others are left as they are). */
  setNodeCondition(condition: V1NodeCondition): Promise<void>;
  /**
   * Whether an admission policy holds this client to its node: a dry run (nothing stored)
   * of a status patch no policy of meshcni's allows, a condition of another type. Refused
   * by a ValidatingAdmissionPolicy: "bound"; accepted where the server serves such
   * policies: "unbound"; accepted where it does not (before 1.30): "unsupported". Any other
   * failure throws.
   */
  probeNodeScope(): Promise<"bound" | "unbound" | "unsupported">;
}

/** "denied": 403, the agent's permissions went; "unauthenticated": 401, its token is refused (its ServiceAccount, or its pod, went). */
export type DaemonSetState = "present" | "deleted" | "denied" | "unauthenticated";

/** What a pod says of who runs it: its DaemonSet (null: none) and its ServiceAccount. */
export interface PodOwners {
  daemonSet: string | null;
  serviceAccount: string;
}

/**
 * The API as the agent and a sweep use it. Every failure in the Status's words (`explain`: a
 * command run by hand puts them in the operator's, naming the server): Events and logs never
 * carry client-node's dump of the exchange.
 */
/** The reportingComponent of the Events meshcni writes (with its node as reportingInstance): meshcni status reads only these. */
export const eventComponent = "meshcni";

export function createNodeApi(config: KubeConfig, nodeName: string, component = eventComponent, explain = apiError): NodeApi {
  const api = rawNodeApi(config, nodeName, component);
  return Object.fromEntries(
    Object.entries(api).map(([name, call]) => [
      name,
      (...args: never[]) =>
        (call as (...args: never[]) => Promise<unknown>)(...args).catch((error: unknown) => {
          throw explain(error);
        }),
    ]),
  ) as unknown as NodeApi;
}

function rawNodeApi(config: KubeConfig, nodeName: string, component: string): NodeApi {
  const api = makeApiClient(config, CoreV1Api);
  const apps = makeApiClient(config, AppsV1Api);
  const admission = makeApiClient(config, AdmissionregistrationV1Api);
  const fieldSelector = `spec.nodeName=${nodeName}`;
  const listPods = async () => (await api.listPodForAllNamespaces({ fieldSelector })).items;
  const tokens = new TokenMinter(api, nodeName);
  return {
    listPods,
    readPod: (namespace, name) => api.readNamespacedPod({ namespace, name }),
    mintToken: (namespace, serviceAccount, seconds) => tokens.mint(namespace, serviceAccount, seconds),
    async createPodEvent(pod, { reason, action, message, type }) {
      const now = new Date();
      const event: CoreV1Event = {
        metadata: { generateName: `${pod.metadata!.name}.`, namespace: pod.metadata!.namespace! },
        involvedObject: {
          apiVersion: "v1",
          kind: "Pod",
          name: pod.metadata!.name!,
          namespace: pod.metadata!.namespace!,
          uid: pod.metadata!.uid!,
        },
        reason,
        action,
        message,
        type,
        count: 1,
        firstTimestamp: now,
        lastTimestamp: now,
        source: { component, host: nodeName },
        reportingComponent: component,
        reportingInstance: nodeName,
      };
      await api.createNamespacedEvent({ namespace: event.metadata.namespace!, body: event });
    },
    async labelPod(pod, key, value) {
      await api.patchNamespacedPod(
        { name: pod.metadata!.name!, namespace: pod.metadata!.namespace!, body: { metadata: { labels: { [key]: value } } } },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      );
    },
    readNamespace: (name) => api.readNamespace({ name }),
    readService: (namespace, name) => api.readNamespacedService({ namespace, name }),
    async readConfigMapKey(namespace, name, key) {
      const configMap = await api.readNamespacedConfigMap({ namespace, name });
      return { value: configMap.data?.[key], resourceVersion: configMap.metadata?.resourceVersion ?? "" };
    },
    async evictPod(pod) {
      const name = pod.metadata!.name!;
      const namespace = pod.metadata!.namespace!;
      const uid = pod.metadata!.uid!;
      try {
        await api.createNamespacedPodEviction({
          name,
          namespace,
          body: { apiVersion: "policy/v1", kind: "Eviction", metadata: { name, namespace }, deleteOptions: { preconditions: { uid } } },
        });
        return "evicted";
      } catch (error) {
        const failure = apiError(error);
        if (!(failure instanceof ApiStatusError) || failure.code !== 429) throw failure;
        return failure.causes.includes("DisruptionBudget") ? "blocked" : { throttledMs: failure.retryAfterMs ?? 1000 };
      }
    },
    async ownersOf(namespace, podName) {
      try {
        const pod = await api.readNamespacedPod({ name: podName, namespace });
        return {
          daemonSet: pod.metadata?.ownerReferences?.find((reference) => reference.kind === "DaemonSet")?.name ?? null,
          serviceAccount: pod.spec?.serviceAccountName || "default",
        };
      } catch (error) {
        throw apiError(error);
      }
    },
    async daemonSetState(namespace, name) {
      try {
        const daemonSet = await apps.readNamespacedDaemonSet({ name, namespace });
        return daemonSet.metadata?.deletionTimestamp ? "deleted" : "present";
      } catch (error) {
        const failure = apiError(error);
        const code = failure instanceof ApiStatusError ? failure.code : undefined;
        if (code === 404) return "deleted";
        if (code === 401) return "unauthenticated";
        if (code === 403) return "denied";
        throw failure;
      }
    },
    async nodeTaints() {
      const node = await api.readNode({ name: nodeName });
      return { taints: node.spec?.taints ?? [], resourceVersion: node.metadata?.resourceVersion ?? "" };
    },
    async setNodeTaints(taints, resourceVersion) {
      // A merge patch naming the resourceVersion is conditional on it: 409 Conflict when the node changed meanwhile
      // (a JSON patch's failed "test" is a bare 422 Invalid from kube-apiserver, indistinguishable from a refusal).
      await api.patchNode(
        { name: nodeName, body: { metadata: { resourceVersion }, spec: { taints } } },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      );
    },
    async setNodeCondition(condition) {
      await api.patchNodeStatus(
        { name: nodeName, body: { status: { conditions: [condition] } } },
        setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch),
      );
    },
    async probeNodeScope() {
      const probe = { type: "MeshcniPolicyProbe", status: "True", reason: "Probe", message: "a dry run: never stored" };
      try {
        await api.patchNodeStatus(
          { name: nodeName, body: { status: { conditions: [probe] } }, dryRun: "All" },
          setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch),
        );
      } catch (error) {
        const failure = apiError(error);
        if (failure instanceof ApiStatusError && failure.code === 422 && failure.message.includes("ValidatingAdmissionPolicy"))
          return "bound";
        throw failure;
      }
      const served = await admission.getAPIResources();
      return served.resources.some((resource) => resource.name === "validatingadmissionpolicies") ? "unbound" : "unsupported";
    },
  };
}
