/** A watch's query: bounded, bookmarked, as the agent's and client-go's reflectors ask. */
const watch = (path: string, query: Record<string, string> = {}) =>
  `${path}?${new URLSearchParams({ watch: "true", allowWatchBookmarks: "true", timeoutSeconds: "3600", ...query })}`;
const byName = (path: string, name: string) => watch(path, { fieldSelector: `metadata.name=${name}` });
/** kube-proxy's selector of the Services and EndpointSlices it serves. */
const proxied = { labelSelector: "!service.kubernetes.io/headless,!service.kubernetes.io/service-proxy-name" };

/** The watches one node's component holds, by the node's name. */
export const watchSets = {
  /** meshcni's agent: its node's pods, its Node, the `kubernetes` Service, its ServiceAccount. */
  meshcni: (node: string) => [
    watch("/api/v1/pods", { fieldSelector: `spec.nodeName=${node}` }),
    byName("/api/v1/nodes", node),
    byName("/api/v1/namespaces/default/services", "kubernetes"),
    byName("/api/v1/namespaces/meshcni/serviceaccounts", "meshcni"),
  ],
  /** kube-proxy (nftables, 1.35): Services and EndpointSlices it serves, its Node, ServiceCIDRs. */
  kubeProxy: (node: string) => [
    watch("/api/v1/services", proxied),
    watch("/apis/discovery.k8s.io/v1/endpointslices", proxied),
    byName("/api/v1/nodes", node),
    watch("/apis/networking.k8s.io/v1/servicecidrs"),
  ],
  /** The agent's pod watch alone: the watch cache indexes it by node. */
  podsByNode: (node: string) => [watch("/api/v1/pods", { fieldSelector: `spec.nodeName=${node}` })],
  /** The agent's three watches by name alone. */
  byName: (node: string) => [
    byName("/api/v1/nodes", node),
    byName("/api/v1/namespaces/default/services", "kubernetes"),
    byName("/api/v1/namespaces/meshcni/serviceaccounts", "meshcni"),
  ],
};
