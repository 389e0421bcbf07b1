import {
  ApiException,
  AppsV1Api,
  CoreV1Api,
  type CoreV1Event,
  KubeConfig,
  makeInformer,
  PatchStrategy,
  setHeaderOptions,
  type V1Namespace,
  type V1Pod,
  type V1Taint,
} from "@kubernetes/client-node";
import { errorMessage } from "../errors.js";

/** What audit and the agent's repair do with the API, for the pods of one node. */
export interface NodeApi {
  listPods(): Promise<V1Pod[]>;
  /** Calls back on every change to a pod of the node until the returned stop is called. */
  /** `error`: the watch broke and is being restarted; `connected`: it (re)started. Neither after stop. */
  watchPods(handlers: {
    change(pod: V1Pod): void;
    remove(pod: V1Pod): void;
    error(error: unknown): void;
    connected(): void;
  }): Promise<() => Promise<void>>;
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

export function kubeConfigFrom(path: string | undefined): KubeConfig {
  const config = new KubeConfig();
  try {
    if (path) config.loadFromFile(path);
    else config.loadFromDefault();
  } catch (error) {
    throw new Error(`cannot read kubeconfig ${path ?? "(default)"}: ${errorMessage(error)}`);
  }
  return config;
}

export function createNodeApi(config: KubeConfig, nodeName: string, component = "meshcni"): NodeApi {
  const api = config.makeApiClient(CoreV1Api);
  const apps = config.makeApiClient(AppsV1Api);
  const fieldSelector = `spec.nodeName=${nodeName}`;
  const listPods = async () => (await api.listPodForAllNamespaces({ fieldSelector })).items;
  return {
    listPods,
    async watchPods({ change, remove, error, connected }) {
      const informer = makeInformer(config, `/api/v1/pods?fieldSelector=${encodeURIComponent(fieldSelector)}`, () =>
        api.listPodForAllNamespaces({ fieldSelector }),
      );
      let stopped = false;
      informer.on("add", change);
      informer.on("update", change);
      informer.on("delete", remove);
      informer.on("connect", () => stopped || connected());
      informer.on("error", (failure) => {
        // Stopping aborts the watch: that is no failure to report.
        if (stopped) return;
        error(failure);
        // The informer stops on error; come back after a pause, as client-go's reflector does.
        setTimeout(() => void (stopped || informer.start().catch(error)), 1000);
      });
      await informer.start();
      return async () => {
        stopped = true;
        await informer.stop();
      };
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
