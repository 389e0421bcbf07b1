import type { LinkerdNetconf } from "./port.js";

/**
 * linkerd2-cni's chart as an operator migrating from it has it: its values.yaml at
 * linkerd/linkerd2 b24cd405 (edge-26.8.3, charts/linkerd2-cni/values.yaml), every key
 * with its default, read off that file (nodeAffinity is commented out there, so absent).
 * Data, not Linkerd's source: what meshcni's chart must take unchanged.
 */
export const linkerdCniValues = {
  inboundProxyPort: 4143,
  outboundProxyPort: 4140,
  ignoreInboundPorts: "",
  ignoreOutboundPorts: "",
  proxyAdminPort: 4191,
  proxyControlPort: 4190,
  podLabels: {},
  commonLabels: {},
  logLevel: "info",
  portsToRedirect: "",
  proxyUID: 2102,
  proxyGID: -1,
  destCNINetDir: "/etc/cni/net.d",
  destCNIBinDir: "/opt/cni/bin",
  useWaitFlag: false,
  iptablesMode: "nft",
  disableIPv6: true,
  priorityClassName: "",
  revisionHistoryLimit: 10,
  updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 1 } },
  enablePSP: false,
  privileged: false,
  tolerations: [{ operator: "Exists" }],
  image: { name: "cr.l5d.io/linkerd/cni-plugin", version: "v1.7.0-alpha.1", pullPolicy: "IfNotPresent" },
  imagePullSecrets: [],
  extraInitContainers: [],
  repairController: {
    enabled: false,
    logLevel: "info",
    logFormat: "plain",
    enableSecurityContext: true,
    resources: {
      cpu: { limit: "", request: "" },
      memory: { limit: "", request: "" },
      "ephemeral-storage": { limit: "", request: "" },
    },
  },
  resources: {
    cpu: { limit: "", request: "" },
    memory: { limit: "", request: "" },
    "ephemeral-storage": { limit: "", request: "" },
  },
};

export type LinkerdCniValues = typeof linkerdCniValues;

/** partials.splitStringList: each comma-separated item quoted as it is (spaces kept: linkerd-cni then drops " 587"). */
const splitStringList = (list: string): string[] => (String(list).length > 0 ? String(list).split(",") : []);

/**
 * The netconf's `linkerd` section that chart renders (templates/cni-plugin.yaml,
 * cni_network_config) for these values, step for step: the admin and control ports
 * first among the ignored inbound ports, portsToRedirect pasted into a JSON array
 * unquoted, proxy-gid only when 0 or more, outbound ports only when some are given.
 */
export function linkerdChartLinkerdSection(values: LinkerdCniValues): LinkerdNetconf & Record<string, unknown> {
  return {
    "incoming-proxy-port": values.inboundProxyPort,
    "outgoing-proxy-port": values.outboundProxyPort,
    "proxy-uid": values.proxyUID,
    ...(values.proxyGID >= 0 ? { "proxy-gid": values.proxyGID } : {}),
    "ports-to-redirect": JSON.parse(`[${values.portsToRedirect}]`) as number[],
    "inbound-ports-to-ignore": [
      String(values.proxyAdminPort),
      String(values.proxyControlPort),
      ...splitStringList(values.ignoreInboundPorts),
    ],
    ...(values.ignoreOutboundPorts ? { "outbound-ports-to-ignore": splitStringList(values.ignoreOutboundPorts) } : {}),
    simulate: false,
    "use-wait-flag": values.useWaitFlag,
    "iptables-mode": values.iptablesMode,
    ipv6: !values.disableIPv6,
  };
}
