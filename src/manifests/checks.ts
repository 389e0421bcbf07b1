import { linkerdDefaults } from "../mesh/defaults.js";
import { linkerdKeys } from "../mesh/netconf.js";
import { parsePortToken } from "../mesh/tokens.js";
import { didYouMean } from "../mesh/unknown-keys.js";
import { parseTaint } from "../taint-spec.js";
import type { ManifestOptions } from "./options.js";
import { systemNamespaces } from "./policy.js";

/** A DNS-1123 label (a namespace's name): what the API server takes. */
export const dnsLabel = "[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?";
/** A DNS-1123 subdomain (a PriorityClass's name). */
const dnsSubdomain = `${dnsLabel}(\\.${dnsLabel})*`;
/** Kubernetes' quantity (resource.Quantity's form): digits, then a binary or decimal suffix or an exponent. */
export const quantityPattern = "^[+]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][-+]?[0-9]+|[KMGTPE]i|[numkMGTPE])?$";
/** A label key: an optional DNS-subdomain prefix and a name of up to 63 characters. */
const labelKey = new RegExp(`^(${dnsSubdomain}/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`);
const labelValue = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;
/** An image reference: [registry[:port]/]path[:tag][@digest], as the container runtimes parse it. */
const imageReference =
  /^([A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?)*(:[0-9]+)?\/)?[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*(\/[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?$/;
/** The label the DaemonSet selects its pods by: a --label may not change it. */
const selectorLabel = "app.kubernetes.io/name";

const suffixes: Record<string, number> = { n: 1e-9, u: 1e-6, m: 1e-3, "": 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };
const binary = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

/** A quantity's value (bytes, cores), to compare a request with its limit; throws naming the flag when it is none. */
export function quantityValue(flag: string, text: string): number {
  if (!new RegExp(quantityPattern).test(text))
    throw new Error(`--${flag} must be a Kubernetes quantity (like 96Mi, 10m, 1), not ${JSON.stringify(text)}`);
  const [, number = "", , , suffix = ""] = /^[+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+))(.*)$/.exec(text) ?? [];
  const base = Number(number);
  if (/^[eE]/.test(suffix)) return base * 10 ** Number(suffix.slice(1));
  const at = binary.indexOf(suffix);
  return base * (at >= 0 ? 1024 ** (at + 1) : suffixes[suffix]!);
}

function absoluteDir(flag: string, path: string): void {
  if (!path.startsWith("/") || path === "/" || path.split("/").some((part) => part === "." || part === ".."))
    throw new Error(`--${flag} must be an absolute path on the node (not / and without . or ..), not ${JSON.stringify(path)}`);
}

function labels(flag: string, pairs: Record<string, string>): void {
  for (const [key, value] of Object.entries(pairs)) {
    if (!labelKey.test(key) || key.length > 316) throw new Error(`--${flag}: ${JSON.stringify(key)} is no label key`);
    if (!labelValue.test(value)) throw new Error(`--${flag}: ${JSON.stringify(value)} (for ${key}) is no label value`);
  }
}

/**
 * Refuses (throws one line naming the flag and the value) what would render manifests that
 * cannot work: a DaemonSet the API server refuses, an agent that refuses its own flags and
 * crash-loops, a mount of a relative path, a netconf key nobody reads. Returns warnings for
 * what works but is likely not meant. Pure.
 */
export function checkManifestOptions(options: ManifestOptions): string[] {
  const warnings: string[] = [];
  if (!new RegExp(`^${dnsLabel}$`).test(options.namespace))
    throw new Error(`--namespace must be a namespace's name (a DNS label), not ${JSON.stringify(options.namespace)}`);
  if (options.createNamespace && [...systemNamespaces, "default"].includes(options.namespace))
    throw new Error(
      `--create-namespace: ${options.namespace} is the cluster's own; meshcni's Namespace object would relax its pod security, and deleting the manifests would delete it`,
    );
  if (!imageReference.test(options.image))
    throw new Error(`--image must be an image reference (registry/name:tag), not ${JSON.stringify(options.image)}`);
  if (options.startupTaint) parseTaint(options.startupTaint);
  for (const [flag, dir] of [
    ["net-dir", options.netDir],
    ["bin-dir", options.binDir],
    ["netns-dir", options.netnsDir],
  ] as const)
    absoluteDir(flag, dir);
  for (const dir of options.extraBinDirs) absoluteDir("extra-bin-dir", dir);
  if (options.criSocket !== "") absoluteDir("cri-socket", options.criSocket);
  const { cpuRequest, memoryRequest, memoryLimit } = options.resources;
  quantityValue("cpu-request", cpuRequest);
  if (quantityValue("memory-request", memoryRequest) > quantityValue("memory-limit", memoryLimit))
    throw new Error(`--memory-request ${memoryRequest} is above --memory-limit ${memoryLimit}: the API server refuses such a DaemonSet`);
  if (options.priorityClassName === "")
    warnings.push("no --priority-class: under memory pressure the kubelet may evict the agent before the pods it protects");
  else if (!new RegExp(`^${dnsSubdomain}$`).test(options.priorityClassName) || options.priorityClassName.length > 253)
    throw new Error(`--priority-class must be a PriorityClass's name, not ${JSON.stringify(options.priorityClassName)}`);
  labels("node-selector", options.nodeSelector);
  labels("label", options.labels);
  if (selectorLabel in options.labels)
    throw new Error(`--label ${selectorLabel}: the DaemonSet selects its pods by it (${selectorLabel}=meshcni); it cannot change`);
  for (const key of Object.keys(options.linkerd)) {
    if (!linkerdKeys.includes(key))
      throw new Error(`--netconf ${key}: no such setting${didYouMean(key)}; the settings are ${linkerdKeys.join(", ")}`);
  }
  const proxyPorts = proxyPortsLeftOut(options.linkerd["inbound-ports-to-ignore"]);
  if (proxyPorts) warnings.push(proxyPorts);
  if (options.linkerdNames && options.namespace !== "linkerd-cni")
    warnings.push(
      `--linkerd-names in namespace ${options.namespace}: \`linkerd check\` looks in linkerd-cni unless given --cni-namespace ${options.namespace}`,
    );
  if (!options.createNamespace)
    warnings.push(
      `no Namespace object: ${options.namespace} must exist and admit privileged pods (pod-security.kubernetes.io/enforce=privileged); --create-namespace to include one`,
    );
  return warnings;
}

/**
 * Why a given inbound-ports-to-ignore may redirect the proxy's own admin and control ports
 * (4191, 4190 by default), which Linkerd's chart always adds to the operator's list:
 * `--netconf` replaces the list whole. Said, not refused: a proxy may listen elsewhere, and
 * only the list says where.
 */
function proxyPortsLeftOut(given: unknown): string | undefined {
  if (!Array.isArray(given)) return undefined;
  const covers = (token: string | number, port: number) => {
    const parsed = parsePortToken(token);
    return parsed.ok && parsed.value.from <= port && port <= parsed.value.to;
  };
  const missing = linkerdDefaults["inbound-ports-to-ignore"].map(Number).filter((port) => !given.some((token) => covers(token, port)));
  if (missing.length === 0) return undefined;
  return (
    `--netconf inbound-ports-to-ignore=${JSON.stringify(given)} leaves out ${missing.join(", ")}, the proxy's admin and control ports ` +
    `unless it was given others (Linkerd's chart always ignores them; the list given replaces the default whole): ` +
    `give ${JSON.stringify([...missing.map(String), ...given.map(String)])} if the proxy listens there`
  );
}
