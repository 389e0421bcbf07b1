import type { KubeObject } from "./watch-hub.js";

/** A pod object as the API returns it; `proxy` adds the linkerd-proxy container. */
export interface PodOptions {
  proxy?: "container" | "native-sidecar" | false;
  init?: boolean;
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
  nodeName?: string;
  podIP?: string;
  /** A controller owning the pod (a ReplicaSet), so deleting it gets it recreated. */
  owned?: boolean;
  /** The DaemonSet owning the pod (the agent's own): it runs as the ServiceAccount of that name, as deploy/'s does. */
  daemonSet?: string;
  deleting?: boolean;
}

export function podObject(namespace: string, name: string, options: PodOptions = {}): KubeObject {
  const proxy = { name: "linkerd-proxy", image: "cr.l5d.io/linkerd/proxy:stable" };
  const app = { name: "app", image: "app:1" };
  const initContainers = [
    ...(options.init ? [{ name: "linkerd-init", image: "cr.l5d.io/linkerd/proxy-init:v2" }] : []),
    ...(options.proxy === "native-sidecar" ? [{ ...proxy, restartPolicy: "Always" }] : []),
  ];
  return {
    metadata: {
      namespace,
      name,
      uid: `uid-${namespace}-${name}`,
      annotations: options.annotations ?? {},
      labels: options.labels ?? {},
      ...(options.daemonSet
        ? {
            ownerReferences: [
              { apiVersion: "apps/v1", kind: "DaemonSet", name: options.daemonSet, uid: `uid-ds-${options.daemonSet}`, controller: true },
            ],
          }
        : {}),
      ...(options.owned
        ? { ownerReferences: [{ apiVersion: "apps/v1", kind: "ReplicaSet", name: `${name}-rs`, uid: `uid-rs-${name}`, controller: true }] }
        : {}),
      ...(options.deleting ? { deletionTimestamp: new Date().toISOString() } : {}),
    },
    spec: {
      ...(options.nodeName ? { nodeName: options.nodeName } : {}),
      serviceAccountName: options.daemonSet ?? "default",
      containers: options.proxy === "container" ? [app, proxy] : [app],
      ...(initContainers.length > 0 ? { initContainers } : {}),
    },
    status: options.podIP ? { phase: "Running", podIP: options.podIP, podIPs: [{ ip: options.podIP }] } : { phase: "Pending" },
  };
}
