import type { V1Namespace, V1Pod, V1Service } from "@kubernetes/client-node";
import { podName } from "../pod-key.js";
import type { Family, FirewallSpec } from "../redirect/spec.js";
import type { LinkerdConf } from "./netconf.js";
import { maxAnnotationTokens, type Parsed, parseIdToken, parsePortToken, parseSubnetToken, splitList } from "./tokens.js";

const proxyContainerName = "linkerd-proxy";
const proxyInitContainerName = "linkerd-init";
const controlPlaneLabel = "linkerd.io/control-plane-component";

/** Linkerd's per-pod (then per-namespace) overrides of the netconf. */
export const annotations = {
  skipInboundPorts: "config.linkerd.io/skip-inbound-ports",
  skipOutboundPorts: "config.linkerd.io/skip-outbound-ports",
  skipSubnets: "config.linkerd.io/skip-subnets",
  proxyUid: "config.linkerd.io/proxy-uid",
  proxyGid: "config.linkerd.io/proxy-gid",
} as const;

/** The Service whose ports a control-plane pod skips outbound, as linkerd-cni reads it. */
export const apiServerService = { namespace: "default", name: "kubernetes" } as const;
/** What linkerd-cni skips when that Service cannot be read. */
const apiServerFallbackPorts = [443, 6443];

/** A Linkerd control-plane pod: the label with a value (linkerd-cni ignores an empty one). */
export const isControlPlane = (pod: V1Pod) => Boolean(pod.metadata?.labels?.[controlPlaneLabel]);

/** The API server's ports as linkerd-cni's getAPIServerPorts lists them: each port, then its targetPort when a number. */
export function apiServerPortsOf(service: V1Service): number[] {
  return (service.spec?.ports ?? []).flatMap((port) => [port.port, ...(typeof port.targetPort === "number" ? [port.targetPort] : [])]);
}

/**
 * The ports a control-plane pod skips, as linkerd-cni finds them: the `kubernetes`
 * Service's, else (it cannot be read) 443 and 6443. `unreadable` hears why it could not be
 * read, and may throw to stop there instead.
 */
export async function readApiServerPorts(
  read: (namespace: string, name: string) => Promise<V1Service>,
  unreadable: (error: unknown) => void = () => undefined,
): Promise<number[]> {
  try {
    return apiServerPortsOf(await read(apiServerService.namespace, apiServerService.name));
  } catch (error) {
    unreadable(error);
    return apiServerFallbackPorts;
  }
}

/** What the decision reads of that Service: its ports. */
export function serviceDecisionFields(service: V1Service): V1Service {
  const { name, namespace } = service.metadata ?? {};
  const ports = (service.spec?.ports ?? []).map(({ port, targetPort }) => ({ port, ...(targetPort === undefined ? {} : { targetPort }) }));
  return { apiVersion: "v1", kind: "Service", metadata: { name, namespace }, spec: { ports } } as V1Service;
}

/** An annotation value that cannot become a rule: the pod's config is invalid. */
export class AnnotationError extends Error {
  readonly token: string | undefined;
  constructor(
    readonly pod: string,
    readonly source: "pod" | "namespace",
    readonly annotation: string,
    problem: { token: string; reason: string } | { count: number },
  ) {
    const what =
      "token" in problem
        ? `has invalid value ${JSON.stringify(problem.token)}: ${problem.reason}`
        : `has ${problem.count} entries: at most ${maxAnnotationTokens} are allowed (the pod's rules, and the agent's audit of them, grow with each)`;
    super(`pod ${pod}: ${source} annotation ${annotation} ${what}`);
    this.name = "AnnotationError";
    this.token = "token" in problem ? problem.token : undefined;
  }
}

/**
 * A pod is meshed when it runs the proxy (a container, or a native-sidecar
 * initContainer) and has no linkerd-init, which programs iptables itself.
 */
export function isMeshed(pod: V1Pod): boolean {
  const spec = pod.spec;
  const hasProxy = [...(spec?.containers ?? []), ...(spec?.initContainers ?? [])].some((c) => c.name === proxyContainerName);
  const hasInit = (spec?.initContainers ?? []).some((c) => c.name === proxyInitContainerName);
  return hasProxy && !hasInit;
}

/** True when one of the override annotations is absent (or empty) on the pod, so the namespace's may apply. */
export function needsNamespaceAnnotations(pod: V1Pod): boolean {
  const own = pod.metadata?.annotations ?? {};
  return Object.values(annotations).some((key) => !own[key]);
}

/** As linkerd-cni reads an override: the pod's value unless empty, else the namespace's unless empty. */
function annotationReader(pod: V1Pod, namespace: V1Namespace | undefined) {
  const fromPod = pod.metadata?.annotations ?? {};
  const fromNamespace = namespace?.metadata?.annotations ?? {};
  return <T>(key: string, parse: (token: string) => Parsed<T>, list: boolean): T[] | undefined => {
    const source = fromPod[key] ? "pod" : "namespace";
    const value = fromPod[key] || fromNamespace[key];
    if (!value) return undefined;
    const tokens = list ? splitList(value) : [value.trim()];
    if (tokens.length > maxAnnotationTokens) throw new AnnotationError(podName(pod), source, key, { count: tokens.length });
    return tokens.map((token) => {
      const parsed = parse(token);
      if (parsed.ok) return parsed.value;
      throw new AnnotationError(podName(pod), source, key, { token, reason: parsed.reason });
    });
  };
}

/**
 * The pod's firewall, as linkerd-cni builds it: the netconf, overridden by the pod's
 * annotations, else its namespace's. skip-inbound-ports adds to the netconf's ignores;
 * skip-outbound-ports and skip-subnets replace the netconf's; control-plane pods (the
 * label with a value) also skip the API server's ports outbound. Order and repeats are
 * kept, as linkerd-cni keeps them.
 */
export function firewallSpecFor(conf: LinkerdConf, pod: V1Pod, namespace: V1Namespace | undefined, apiServerPorts: number[]): FirewallSpec {
  const read = annotationReader(pod, namespace);
  const skipInbound = read(annotations.skipInboundPorts, parsePortToken, true) ?? [];
  const skipOutbound = read(annotations.skipOutboundPorts, parsePortToken, true) ?? conf["outbound-ports-to-ignore"];
  const subnets = read(annotations.skipSubnets, parseSubnetToken, true) ?? conf["subnets-to-ignore"];
  const [proxyUid] = read(annotations.proxyUid, parseIdToken, false) ?? [conf["proxy-uid"]];
  const [proxyGid] = read(annotations.proxyGid, parseIdToken, false) ?? [conf["proxy-gid"]];
  const apiPorts = isControlPlane(pod) ? apiServerPorts.map((port) => ({ from: port, to: port })) : [];
  return {
    inboundProxyPort: conf["incoming-proxy-port"],
    outboundProxyPort: conf["outgoing-proxy-port"],
    proxyUid: proxyUid!,
    ...(proxyGid === undefined ? {} : { proxyGid }),
    portsToRedirect: conf["ports-to-redirect"],
    inboundPortsToIgnore: [...conf["inbound-ports-to-ignore"], ...skipInbound],
    outboundPortsToIgnore: [...skipOutbound, ...apiPorts],
    subnetsToIgnore: subnets,
  };
}

/** IPv4 always; IPv6 too when the netconf asks or the pod has an IPv6 address. */
export function redirectFamilies(conf: LinkerdConf, addresses: string[]): Family[] {
  return conf.ipv6 || addresses.some((address) => address.includes(":")) ? ["ipv4", "ipv6"] : ["ipv4"];
}

const names = (containers: Array<{ name: string }> | undefined) => containers?.map(({ name }) => ({ name }));

/** Only the annotations the decision reads (Linkerd's config.linkerd.io/ keys): a pod's or namespace's others can be large. */
function linkerdAnnotations(annotations: Record<string, string> | undefined): Record<string, string> | undefined {
  const kept = Object.entries(annotations ?? {}).filter(([key]) => key.startsWith("config.linkerd.io/"));
  return kept.length > 0 ? Object.fromEntries(kept) : undefined;
}

/**
 * What meshcni reads of a pod anywhere (the decision, the audit, the repair), as the API
 * shapes it: all the agent's cache keeps of each pod of its node.
 */
export function podFields(pod: V1Pod): V1Pod {
  const { name, namespace, uid, resourceVersion, labels, annotations, ownerReferences, deletionTimestamp } = pod.metadata ?? {};
  const controllers = ownerReferences?.filter((owner) => owner.controller);
  const { phase, podIP, podIPs } = pod.status ?? {};
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace,
      uid,
      resourceVersion,
      labels,
      annotations: linkerdAnnotations(annotations),
      ...(controllers?.length ? { ownerReferences: controllers } : {}),
      ...(deletionTimestamp ? { deletionTimestamp } : {}),
    },
    spec: {
      nodeName: pod.spec?.nodeName,
      hostNetwork: pod.spec?.hostNetwork,
      containers: names(pod.spec?.containers) ?? [],
      ...(pod.spec?.initContainers ? { initContainers: names(pod.spec.initContainers) } : {}),
    },
    status: { phase, podIP, podIPs },
  } as V1Pod;
}

/**
 * What the decision reads of a pod (isMeshed, the overrides, the control-plane label), as
 * the API shapes it: what the agent sends the plugin instead of the whole pod.
 */
export function decisionFields(pod: V1Pod): V1Pod {
  const { name, namespace, uid, labels, annotations } = pod.metadata ?? {};
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace, uid, labels, annotations: linkerdAnnotations(annotations) },
    spec: {
      containers: names(pod.spec?.containers) ?? [],
      ...(pod.spec?.initContainers ? { initContainers: names(pod.spec.initContainers) } : {}),
    },
  } as V1Pod;
}

/** What the decision reads of a namespace: its Linkerd annotations. */
export function namespaceDecisionFields(namespace: V1Namespace): V1Namespace {
  const { name, annotations } = namespace.metadata ?? {};
  return { apiVersion: "v1", kind: "Namespace", metadata: { name, annotations: linkerdAnnotations(annotations) } } as V1Namespace;
}

/** What the agent keeps of a namespace it read: its name and Linkerd annotations, nothing else. */
export function namespaceFields(namespace: V1Namespace): V1Namespace {
  const { name, annotations } = namespace.metadata ?? {};
  const kept = linkerdAnnotations(annotations);
  return { metadata: kept ? { name, annotations: kept } : { name } } as V1Namespace;
}
