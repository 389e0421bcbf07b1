import type { IDaemonSet } from "kubernetes-models/apps/v1";
import { describe, expect, it } from "vitest";
import { parseManifestArgs } from "../../src/manifests/main.js";
import { renderManifests } from "../../src/manifests/render.js";
import { type K8sObject, objectIn, renderedObjects } from "../kit/chart/helm.js";

/** Labels Helm's conventions add (not meshcni's): the chart and who manages it. */
const helmLabels = ["app.kubernetes.io/managed-by", "helm.sh/chart"];

/**
 * An object as both must render it: Helm's labels off, the ConfigMap's netconf parsed (its
 * meaning, not its spacing), the config checksum checked for form and set aside (each renders
 * the netconf's text in its own spacing, so each hashes its own).
 */
function comparable(object: K8sObject): unknown {
  const copy = structuredClone(object) as K8sObject & {
    data?: { cni_network_config?: string };
    spec?: { template?: { metadata?: { annotations?: Record<string, string> } } };
  };
  for (const label of helmLabels) delete (copy.metadata.labels as Record<string, string> | undefined)?.[label];
  if (copy.kind === "ConfigMap" && copy.data?.cni_network_config) copy.data.cni_network_config = JSON.parse(copy.data.cni_network_config);
  const annotations = copy.spec?.template?.metadata?.annotations;
  if (annotations) {
    expect(annotations["checksum/config"], `${copy.kind}'s checksum/config`).toMatch(/^[0-9a-f]{64}$/);
    annotations["checksum/config"] = "sha256";
  }
  return copy;
}

const byKindAndName = (objects: K8sObject[]) =>
  Object.fromEntries(objects.map((object) => [`${object.kind}/${object.metadata.name}`, comparable(object)]));

/** Each `meshcni manifests` option, and the chart value that means it. */
const cases: Array<{ option: string; values: Record<string, unknown>; flags: string[] }> = [
  { option: "defaults", values: {}, flags: [] },
  {
    option: "--image",
    values: { image: { name: "registry.example/meshcni", version: "1.2.3" } },
    flags: ["--image", "registry.example/meshcni:1.2.3"],
  },
  {
    option: "--image NAME:TAG@DIGEST",
    values: { image: { name: "registry.example/meshcni", version: "1.2.3", digest: `sha256:${"ab".repeat(32)}` } },
    flags: ["--image", `registry.example/meshcni:1.2.3@sha256:${"ab".repeat(32)}`],
  },
  { option: "--log-level", values: { logLevel: "debug" }, flags: ["--log-level", "debug"] },
  { option: "--repair label", values: { repair: "label" }, flags: ["--repair", "label"] },
  { option: "--repair none", values: { repair: "none" }, flags: ["--repair", "none"] },
  {
    option: "--repair evict",
    values: { repair: "evict", evictNamespaces: ["*"] },
    flags: ["--repair", "evict", "--evict-namespaces", "*"],
  },
  {
    option: "--evict-namespaces",
    values: { repair: "evict", evictNamespaces: ["shop", "pay"] },
    flags: ["--repair", "evict", "--evict-namespaces", "shop,pay"],
  },
  { option: '--startup-taint ""', values: { startupTaint: "" }, flags: ["--startup-taint", ""] },
  {
    option: "--startup-taint with a value and an effect",
    values: { startupTaint: "example.com/cni-wait=yes:NoExecute" },
    flags: ["--startup-taint", "example.com/cni-wait=yes:NoExecute"],
  },
  {
    option: "--startup-taint without an effect",
    values: { startupTaint: "example.com/cni" },
    flags: ["--startup-taint", "example.com/cni"],
  },
  {
    option: "--net-dir, --bin-dir",
    values: { destCNINetDir: "/var/lib/cni/net.d", destCNIBinDir: "/var/lib/cni/bin" },
    flags: ["--net-dir", "/var/lib/cni/net.d", "--bin-dir", "/var/lib/cni/bin"],
  },
  {
    option: "--net-dir equal to --bin-dir",
    values: { destCNINetDir: "/etc/cni", destCNIBinDir: "/etc/cni" },
    flags: ["--net-dir", "/etc/cni", "--bin-dir", "/etc/cni"],
  },
  {
    option: "--extra-bin-dir",
    values: { extraCNIBinDirs: ["/usr/lib/cni", "/usr/libexec/cni"] },
    flags: ["--extra-bin-dir", "/usr/lib/cni", "--extra-bin-dir", "/usr/libexec/cni"],
  },
  { option: "--netns-dir", values: { netnsDir: "/run/netns" }, flags: ["--netns-dir", "/run/netns"] },
  { option: "--cri-socket (CRI-O)", values: { criSocket: "/var/run/crio/crio.sock" }, flags: ["--cri-socket", "/var/run/crio/crio.sock"] },
  { option: '--cri-socket ""', values: { criSocket: "" }, flags: ["--cri-socket", ""] },
  {
    option: "--cpu-request, --memory-request, --memory-limit",
    values: { resources: { cpu: { request: "50m" }, memory: { request: "128Mi", limit: "256Mi" } } },
    flags: ["--cpu-request", "50m", "--memory-request", "128Mi", "--memory-limit", "256Mi"],
  },
  { option: "--priority-class", values: { priorityClassName: "mesh-critical" }, flags: ["--priority-class", "mesh-critical"] },
  {
    option: "--node-selector",
    values: { nodeSelector: { "node.example/pool": "mesh", tier: "1" } },
    flags: ["--node-selector", "node.example/pool=mesh", "--node-selector", "tier=1"],
  },
  {
    option: "--toleration (and the startup taint's, always)",
    values: {
      tolerations: [
        { key: "node-role.kubernetes.io/control-plane", operator: "Exists", effect: "NoSchedule" },
        { key: "dedicated", operator: "Equal", value: "mesh" },
      ],
    },
    flags: ["--toleration", "node-role.kubernetes.io/control-plane:NoSchedule", "--toleration", "dedicated=mesh"],
  },
  {
    option: "--label",
    values: { commonLabels: { team: "platform", "example.com/cost": "mesh" } },
    flags: ["--label", "team=platform", "--label", "example.com/cost=mesh"],
  },
  {
    option: "--netconf (Linkerd's keys, as the chart's linkerd2-cni values and its netconf map)",
    values: {
      inboundProxyPort: 5143,
      outboundProxyPort: 5140,
      proxyUID: 3000,
      proxyGID: 3001,
      portsToRedirect: "80,443",
      ignoreOutboundPorts: "25,8000-8100",
      iptablesMode: "legacy",
      disableIPv6: false,
      useWaitFlag: true,
      netconf: { "subnets-to-ignore": ["10.9.0.0/16"] },
    },
    flags: [
      ...["--netconf", "incoming-proxy-port=5143", "--netconf", "outgoing-proxy-port=5140", "--netconf", "proxy-uid=3000"],
      ...[
        "--netconf",
        "proxy-gid=3001",
        "--netconf",
        "ports-to-redirect=[80,443]",
        "--netconf",
        'outbound-ports-to-ignore=["25","8000-8100"]',
      ],
      ...["--netconf", "iptables-mode=legacy", "--netconf", "ipv6=true", "--netconf", "use-wait-flag=true"],
      ...["--netconf", 'subnets-to-ignore=["10.9.0.0/16"]'],
    ],
  },
  {
    option: "--netconf inbound-ports-to-ignore (the admin and control ports first)",
    values: { proxyAdminPort: 5191, proxyControlPort: 5190, ignoreInboundPorts: "22,9000-9100" },
    flags: ["--netconf", 'inbound-ports-to-ignore=["5191","5190","22","9000-9100"]'],
  },
  { option: "--metrics-port", values: { metricsPort: 9400 }, flags: ["--metrics-port", "9400"] },
  {
    option: "--pod-monitor, --prometheus-rule, --grafana-dashboard",
    values: { podMonitor: { enabled: true }, prometheusRule: { enabled: true }, grafanaDashboard: { enabled: true } },
    flags: ["--pod-monitor", "--prometheus-rule", "--grafana-dashboard"],
  },
  { option: "--linkerd-names", values: { linkerdNames: true }, flags: ["--linkerd-names"] },
  { option: "--chain-by conflist", values: { chainBy: "conflist" }, flags: ["--chain-by", "conflist"] },
];

/**
 * The chart installs what `meshcni manifests` renders: for every option, `helm template` of the
 * chart with the value meaning it gives the same objects, field for field, as the manifests with
 * the flag (but the Namespace, which Helm's --create-namespace makes, and Helm's own labels).
 */
describe("the chart renders what meshcni manifests renders", () => {
  it.each(cases.map((testCase) => [testCase.option, testCase] as const))("%s", async (_option, { values, flags }) => {
    const manifests = renderManifests(parseManifestArgs(flags)).filter((object) => object.kind !== "Namespace") as K8sObject[];
    const chart = await renderedObjects(values);
    expect(Object.keys(byKindAndName(chart)).sort()).toEqual(Object.keys(byKindAndName(manifests)).sort());
    expect(byKindAndName(chart)).toEqual(byKindAndName(manifests));
  });

  it("changes the config checksum when, and only when, the netconf changes", async () => {
    const checksum = async (values: Record<string, unknown>) => {
      const daemonSet = objectIn<IDaemonSet>(await renderedObjects(values), "DaemonSet");
      return daemonSet.spec!.template.metadata!.annotations!["checksum/config"];
    };
    const base = await checksum({});
    expect(await checksum({ ignoreInboundPorts: "9999" })).not.toBe(base);
    expect(await checksum({ logLevel: "debug" })).not.toBe(base);
    expect(await checksum({ metricsPort: 9400 })).toBe(base);
  });
});
