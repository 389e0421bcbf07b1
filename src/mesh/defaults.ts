/**
 * Linkerd's linkerd-cni settings as its chart renders them: the netconf's defaults and
 * the installer's template both come from here, and deploy/'s ConfigMap is checked
 * against it. The order of the ignored ports is the chart's, so a pod set up by
 * linkerd-cni holds exactly the rules meshcni plans for it.
 */
export const linkerdDefaults = {
  "incoming-proxy-port": 4143,
  "outgoing-proxy-port": 4140,
  "proxy-uid": 2102,
  "ports-to-redirect": [],
  "inbound-ports-to-ignore": ["4191", "4190"],
  simulate: false,
  "use-wait-flag": false,
  "iptables-mode": "auto",
  ipv6: false,
} as const;

/** Where the installer writes the plugin's kubeconfig, as the host sees it. */
export const defaultKubeconfig = "/etc/cni/net.d/ZZZ-meshcni-kubeconfig";
