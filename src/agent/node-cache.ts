import type { V1Namespace, V1Pod } from "@kubernetes/client-node";
import { podName } from "../pod-key.js";

/** The node's pods and every namespace, as the agent's watches last saw them. */
export class NodeCache {
  private readonly pods = new Map<string, V1Pod>();
  private readonly namespaces = new Map<string, V1Namespace>();

  setPod(pod: V1Pod): void {
    this.pods.set(podName(pod), pod);
  }

  removePod(pod: V1Pod): void {
    // A later pod of the same name may already be there: only this one goes.
    if (this.pods.get(podName(pod))?.metadata?.uid === pod.metadata?.uid) this.pods.delete(podName(pod));
  }

  setNamespace(namespace: V1Namespace): void {
    this.namespaces.set(namespace.metadata?.name ?? "", namespace);
  }

  removeNamespace(namespace: V1Namespace): void {
    this.namespaces.delete(namespace.metadata?.name ?? "");
  }

  pod(namespace: string, name: string): V1Pod | undefined {
    return this.pods.get(`${namespace}/${name}`);
  }

  namespace(name: string): V1Namespace | undefined {
    return this.namespaces.get(name);
  }
}
