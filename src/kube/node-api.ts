import { readFileSync } from "node:fs";
import {
  ApiException,
  AppsV1Api,
  CoreV1Api,
  type CoreV1Event,
  KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  makeInformer,
  PatchStrategy,
  setHeaderOptions,
  type V1Namespace,
  type V1Pod,
  type V1Taint,
} from "@kubernetes/client-node";
import { errorMessage } from "../errors.js";

/** What a watch calls back with. */
export interface WatchHandlers<T> {
  change(object: T): void;
  remove(object: T): void;
  error(error: unknown): void;
  connected(): void;
}

/** What audit and the agent's repair do with the API, for the pods of one node. */
export interface NodeApi {
  listPods(): Promise<V1Pod[]>;
  /**
   * Calls back on every change to a pod of the node until the returned stop is called.
   * `error`: the watch broke and is being restarted; `connected`: it (re)started. Neither after stop.
   */
  watchPods(handlers: WatchHandlers<V1Pod>): Promise<() => Promise<void>>;
  /** Every namespace, as watchPods does for the node's pods. */
  watchNamespaces(handlers: WatchHandlers<V1Namespace>): Promise<() => Promise<void>>;
  readPod(namespace: string, name: string): Promise<V1Pod>;
  /**
   * A token of a ServiceAccount (TokenRequest), valid for `seconds`: what the agent writes
   * into the plugin's kubeconfig instead of its own.
   */
  mintToken(namespace: string, serviceAccount: string, seconds: number): Promise<{ token: string; expiresAt: number }>;
  /** An Event on the pod: why (reason), what meshcni did about it (action), and what to do (message). */
  createPodEvent(pod: V1Pod, event: { reason: string; action: string; message: string; type: "Normal" | "Warning" }): Promise<void>;
  labelPod(pod: V1Pod, key: string, value: string): Promise<void>;
  readNamespace(name: string): Promise<V1Namespace>;
  /**
   * Asks the Eviction API to evict the pod (still the same pod: UID precondition), so its
   * PodDisruptionBudgets hold: "blocked" when one would be violated (429).
   */
  evictPod(pod: V1Pod): Promise<"evicted" | "blocked">;
  /**
   * The DaemonSet owning this pod: "present", "deleted" (gone, being deleted, or the pod
   * has none) or "denied" (401/403: its ServiceAccount or permissions are gone). Any other
   * failure throws.
   */
  ownerDaemonSet(namespace: string, podName: string): Promise<"present" | "deleted" | "denied">;
  nodeTaints(): Promise<{ taints: V1Taint[]; resourceVersion: string }>;
  /** Replaces the node's taints if the node has not changed since resourceVersion. */
  setNodeTaints(taints: V1Taint[], resourceVersion: string): Promise<void>;
}

/** A kubeconfig from a file, from stdin ("-": how the agent hands a sweep its credentials), or the default (KUBECONFIG, in-cluster). */
export function kubeConfigFrom(path: string | undefined): KubeConfig {
  const config = new KubeConfig();
  try {
    if (path === "-") config.loadFromString(readFileSync(0, "utf8"));
    else if (path) config.loadFromFile(path);
    else config.loadFromDefault();
  } catch (error) {
    throw new Error(`cannot read kubeconfig ${path ?? "(default)"}: ${errorMessage(error)}`);
  }
  return config;
}

/**
 * An informer: list, then watch, calling back on each change; restarted a second after
 * it breaks, as client-go's reflector does. Returns its stop.
 */
async function watch<T extends KubernetesObject>(
  config: KubeConfig,
  path: string,
  list: () => Promise<KubernetesListObject<T>>,
  { change, remove, error, connected }: WatchHandlers<T>,
): Promise<() => Promise<void>> {
  const informer = makeInformer(config, path, list);
  let stopped = false;
  informer.on("add", change);
  informer.on("update", change);
  informer.on("delete", remove);
  informer.on("connect", () => stopped || connected());
  informer.on("error", (failure) => {
    // Stopping aborts the watch: that is no failure to report.
    if (stopped) return;
    error(failure);
    setTimeout(() => void (stopped || informer.start().catch(error)), 1000);
  });
  await informer.start();
  return async () => {
    stopped = true;
    await informer.stop();
  };
}

export function createNodeApi(config: KubeConfig, nodeName: string, component = "meshcni"): NodeApi {
  const api = config.makeApiClient(CoreV1Api);
  const apps = config.makeApiClient(AppsV1Api);
  const fieldSelector = `spec.nodeName=${nodeName}`;
  const listPods = async () => (await api.listPodForAllNamespaces({ fieldSelector })).items;
  return {
    listPods,
    watchPods: (handlers) =>
      watch(
        config,
        `/api/v1/pods?fieldSelector=${encodeURIComponent(fieldSelector)}`,
        () => api.listPodForAllNamespaces({ fieldSelector }),
        handlers,
      ),
    watchNamespaces: (handlers) => watch(config, "/api/v1/namespaces", () => api.listNamespace(), handlers),
    readPod: (namespace, name) => api.readNamespacedPod({ namespace, name }),
    async mintToken(namespace, serviceAccount, seconds) {
      const answer = await api.createNamespacedServiceAccountToken({
        namespace,
        name: serviceAccount,
        body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { audiences: [], expirationSeconds: seconds } },
      });
      const token = answer.status?.token;
      const expires = answer.status?.expirationTimestamp;
      if (!token || !expires) throw new Error(`the API server's TokenRequest answer for ${namespace}/${serviceAccount} has no token`);
      return { token, expiresAt: new Date(expires).getTime() };
    },
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
        if (error instanceof ApiException && error.code === 429) return "blocked";
        throw error;
      }
    },
    async ownerDaemonSet(namespace, podName) {
      try {
        const pod = await api.readNamespacedPod({ name: podName, namespace });
        const owner = pod.metadata?.ownerReferences?.find((reference) => reference.kind === "DaemonSet")?.name;
        if (!owner) return "deleted";
        const daemonSet = await apps.readNamespacedDaemonSet({ name: owner, namespace });
        return daemonSet.metadata?.deletionTimestamp ? "deleted" : "present";
      } catch (error) {
        if (error instanceof ApiException && error.code === 404) return "deleted";
        if (error instanceof ApiException && (error.code === 401 || error.code === 403)) return "denied";
        throw error;
      }
    },
    async nodeTaints() {
      const node = await api.readNode({ name: nodeName });
      return { taints: node.spec?.taints ?? [], resourceVersion: node.metadata?.resourceVersion ?? "" };
    },
    async setNodeTaints(taints, resourceVersion) {
      await api.patchNode(
        {
          name: nodeName,
          body: [
            { op: "test", path: "/metadata/resourceVersion", value: resourceVersion },
            { op: "add", path: "/spec/taints", value: taints },
          ],
        },
        setHeaderOptions("Content-Type", PatchStrategy.JsonPatch),
      );
    },
  };
}
