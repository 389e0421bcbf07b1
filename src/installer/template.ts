import { isOwnEntry, type JsonObject } from "./conflist.js";

/** Linkerd's installer placeholder for where the kubeconfig lands on the host. */
export const kubeconfigPlaceholder = "__KUBECONFIG_FILEPATH__";

/** The entry written when no template is given: Linkerd's defaults, our type. */
export const defaultTemplate = JSON.stringify({
  name: "meshcni",
  type: "meshcni",
  log_level: "info",
  kubernetes: { kubeconfig: kubeconfigPlaceholder },
  linkerd: {
    "incoming-proxy-port": 4143,
    "outgoing-proxy-port": 4140,
    "proxy-uid": 2102,
    "ports-to-redirect": [],
    "inbound-ports-to-ignore": ["4191", "4190"],
    simulate: false,
    "use-wait-flag": false,
    "iptables-mode": "auto",
    ipv6: false,
  },
});

export type Template = { ok: true; entry: JsonObject; binaryName: string } | { ok: false; reason: string };

/**
 * Turns the netconf template (Linkerd's CNI_NETWORK_CONFIG) into the plugin entry. Its
 * type names the binary in the CNI bin dir, so it must be meshcni or linkerd-cni.
 */
export function renderTemplate(text: string, kubeconfigPath: string): Template {
  let entry: unknown;
  try {
    entry = JSON.parse(text.split(kubeconfigPlaceholder).join(kubeconfigPath.replace(/["\\]/g, "\\$&")));
  } catch (error) {
    return { ok: false, reason: `the netconf template is not valid JSON: ${(error as Error).message}` };
  }
  if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
    return { ok: false, reason: "the netconf template must be a JSON object" };
  }
  if (!isOwnEntry(entry)) {
    return {
      ok: false,
      reason: `the netconf template's type must be "meshcni" or "linkerd-cni", not ${JSON.stringify((entry as JsonObject).type)}`,
    };
  }
  return { ok: true, entry: entry as JsonObject, binaryName: (entry as JsonObject).type as string };
}
