import { expect } from "vitest";
import { fileRecordStore } from "../../../src/state/records.js";
import type { PodObject, RealCluster } from "./cluster.js";
import { hostPort } from "./families.js";
import { probeImage } from "./images.js";
import { agentStateDir, startupTaint } from "./layout.js";

/** The banners the proxy stand-in answers with: a connection it answers was redirected to it. */
export const proxyInbound = "proxy-inbound";
export const proxyOutbound = "proxy-outbound";
export const proxyUid = 2102;

type Manifest = Record<string, unknown>;

const probe = (name: string, listeners: Record<number, string>, extra: Manifest = {}) => ({
  name,
  image: probeImage,
  imagePullPolicy: "Never",
  args: ["serve", ...Object.entries(listeners).map(([port, banner]) => `:${port}=${banner}`)],
  ...extra,
});

/**
 * The proxy as Linkerd's injector writes it: `linkerd-proxy`, UID 2102, listening on 4143
 * (inbound) and 4140 (outbound); answering alone, or forwarding as a proxy does (the probe's ">").
 */
const proxyContainer = (forwards = false) => {
  const on = forwards ? ">" : "";
  return probe(
    "linkerd-proxy",
    { 4143: `${proxyInbound}${on}`, 4140: `${proxyOutbound}${on}` },
    { securityContext: { runAsUser: proxyUid } },
  );
};

export interface MeshedOptions {
  namespace?: string;
  replicas?: number;
  /** The proxy as a native sidecar (an initContainer that keeps running) or a plain container. */
  sidecar: "native" | "container";
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
  /** Tolerates meshcni's startup taint: a pod that may start before meshcni is chained. */
  early?: boolean;
  /** A readiness gate: each pod is Ready only once the test sets this condition (releaseGate). */
  readinessGate?: string;
  /** The proxy forwards each connection on, so an answer names every hop: "proxy-outbound … > proxy-inbound … > app …". */
  forwards?: boolean;
  /** The node the pods are scheduled to (with several), as a selector: the scheduler still heeds its taints. */
  node?: string;
  /** At most one pod more on any node than on another (with several), counting only nodes the pods may go to (a cordoned one not). */
  spread?: boolean;
}

const evenlyOverNodes = (app: string) => ({
  maxSkew: 1,
  topologyKey: "kubernetes.io/hostname",
  whenUnsatisfiable: "DoNotSchedule",
  nodeTaintsPolicy: "Honor",
  labelSelector: { matchLabels: { app } },
});

/** The pod template of a meshed workload: an app answering `<name>` on 8080 and `<name>-9090` on 9090, and the proxy. */
export function meshedTemplate(name: string, options: MeshedOptions): Manifest {
  const app = probe("app", { 8080: name, 9090: `${name}-9090` });
  const proxy = proxyContainer(options.forwards);
  return {
    metadata: {
      labels: { app: name, ...options.labels },
      annotations: { "linkerd.io/inject": "enabled", ...options.annotations },
    },
    spec: {
      terminationGracePeriodSeconds: 1,
      ...(options.node ? { nodeSelector: { "kubernetes.io/hostname": options.node } } : {}),
      ...(options.spread ? { topologySpreadConstraints: [evenlyOverNodes(name)] } : {}),
      ...(options.early ? { tolerations: [{ key: startupTaint, operator: "Exists" }] } : {}),
      ...(options.readinessGate ? { readinessGates: [{ conditionType: options.readinessGate }] } : {}),
      ...(options.sidecar === "native"
        ? { initContainers: [{ ...proxy, restartPolicy: "Always" }], containers: [app] }
        : { containers: [proxy, app] }),
    },
  };
}

/** One meshed pod named `name` (its app answering `<name>`), as the injector writes one. */
export function meshedPod(name: string, options: MeshedOptions): Manifest {
  const template = meshedTemplate(name, options) as { metadata: Manifest; spec: Manifest };
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { ...template.metadata, name, namespace: options.namespace ?? "default" },
    spec: template.spec,
  };
}

export function meshedDeployment(name: string, options: MeshedOptions): Manifest {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: options.namespace ?? "default" },
    spec: {
      replicas: options.replicas ?? 1,
      selector: { matchLabels: { app: name } },
      template: meshedTemplate(name, options),
    },
  };
}

/**
 * An unmeshed pod answering `<name>-<port>` on each port (8080 and the API server's ports
 * by default: a control-plane pod's skipped destinations), also the tests' client.
 */
export function plainPod(
  name: string,
  options: { namespace?: string; ports?: number[]; early?: boolean; labels?: Record<string, string>; node?: string } = {},
): Manifest {
  const ports = options.ports ?? [8080, 443, 6443, 6444];
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: options.namespace ?? "default", labels: { app: name, ...options.labels } },
    spec: {
      terminationGracePeriodSeconds: 1,
      ...(options.node ? { nodeSelector: { "kubernetes.io/hostname": options.node } } : {}),
      ...(options.early ? { tolerations: [{ key: startupTaint, operator: "Exists" }] } : {}),
      containers: [probe("app", Object.fromEntries(ports.map((port) => [port, `${name}-${port}`])))],
    },
  };
}

/**
 * A pod of a tenant allowed a hostPath and nothing else (root, every capability dropped, its
 * own netns) holding the path of the socket `socket` (in the host's dir `dir`) against its
 * owner, answering what it is asked as the agent would answer (the probe's `squat`).
 */
export function squatterPod(name: string, dir: string, socket: string): Manifest {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default", labels: { app: name } },
    spec: {
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: "squat",
          image: probeImage,
          imagePullPolicy: "Never",
          args: ["squat", socket],
          securityContext: { runAsUser: 0, capabilities: { drop: ["ALL"] }, allowPrivilegeEscalation: false },
          volumeMounts: [{ name: "state", mountPath: dir }],
        },
      ],
      volumes: [{ name: "state", hostPath: { path: dir, type: "Directory" } }],
    },
  };
}

/** Sets a pod's readiness-gate condition, as the controller a gate waits for would: the pod is then Ready. */
export async function releaseGate(cluster: RealCluster, pod: string, conditionType: string, namespace = "default"): Promise<void> {
  const status = { status: { conditions: [{ type: conditionType, status: "True", lastTransitionTime: new Date().toISOString() }] } };
  await cluster.kubectl(["patch", "pod", pod, "-n", namespace, "--subresource=status", "--type=strategic", "-p", JSON.stringify(status)]);
}

/** A PodDisruptionBudget over a workload's pods: at most `maxUnavailable` of them evicted at once. */
export function disruptionBudget(name: string, maxUnavailable: number, namespace = "default"): Manifest {
  return {
    apiVersion: "policy/v1",
    kind: "PodDisruptionBudget",
    metadata: { name, namespace },
    spec: { maxUnavailable, selector: { matchLabels: { app: name } } },
  };
}

/** Objects as one `kubectl apply -f -` input. */
export const asList = (...items: Manifest[]) => JSON.stringify({ apiVersion: "v1", kind: "List", items });

/** The pod `client` and a meshed Deployment `shop` (the proxy a native sidecar) of `replicas`, rolled out. */
export async function startClientAndShop(cluster: RealCluster, replicas = 1): Promise<void> {
  await cluster.kubectl(["apply", "-f", "-"], asList(plainPod("client"), meshedDeployment("shop", { sidecar: "native", replicas })));
  await cluster.kubectl(["rollout", "status", "deployment/shop", "--timeout=90s"]);
}

/** Every running pod `app=<app>` (not one being deleted) answers inbound through its proxy, from the pod `client`; how many there are. */
export async function expectRunningPodsRedirected(cluster: RealCluster, app: string): Promise<number> {
  const client = await cluster.podIp("client");
  const pods = (await cluster.get<{ items: PodObject[] }>("pods", "-l", `app=${app}`)).items.filter(
    (pod) => pod.status.phase === "Running" && !pod.metadata.deletionTimestamp,
  );
  const answers = await Promise.all(pods.map((pod) => cluster.connect("client", hostPort(pod.status.podIP!, 8080))));
  expect(answers).toEqual(pods.map((pod) => `${proxyInbound} dst=${hostPort(pod.status.podIP!, 8080)} src=${client}`));
  return pods.length;
}

/** How each pod of `app` that meshcni recorded got its redirect: its sandbox's ADD through meshcni, or the sweep's repair. */
export async function redirectedBy(cluster: RealCluster, app: string): Promise<Array<"ADD" | "sweep">> {
  const uids = (await cluster.get<{ items: PodObject[] }>("pods", "-l", `app=${app}`)).items.map((pod) => pod.metadata.uid);
  return fileRecordStore(agentStateDir)
    .list()
    .filter((record) => uids.includes(record.pod.uid))
    .map((record) => (record.containerId.startsWith("repaired-") ? "sweep" : "ADD"));
}

/** What the tests read of an Event. */
export interface EventObject {
  reason: string;
  action?: string;
  type: string;
  message: string;
  involvedObject: { name: string };
  reportingComponent?: string;
}
