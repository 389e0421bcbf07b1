import { errorMessage } from "../errors.js";
import { readRegularFile } from "../file-open.js";
import { isJsonObject, type JsonObject } from "../json.js";
import { linkerdDefaults } from "../mesh/defaults.js";
import { isRedirectEntry } from "../mesh/netconf.js";
import { type InstallOptions, installPaths } from "./options.js";

/** Linkerd's installer placeholder for where the kubeconfig lands on the host. */
export const kubeconfigPlaceholder = "__KUBECONFIG_FILEPATH__";

/** The entry written when no template is given: Linkerd's chart settings, our type. */
export const defaultTemplate = JSON.stringify({
  name: "meshcni",
  type: "meshcni",
  log_level: "info",
  kubernetes: { kubeconfig: kubeconfigPlaceholder },
  linkerd: linkerdDefaults,
});

export type Template = { ok: true; entry: JsonObject; binaryName: string } | { ok: false; reason: string };

/**
 * Turns the netconf template (Linkerd's CNI_NETWORK_CONFIG) into the plugin entry, with
 * the agent's socket. Its type names the binary in the CNI bin dir, so it must be meshcni
 * or linkerd-cni.
 */
export function renderTemplate(text: string, kubeconfigPath: string, agentSocket?: string): Template {
  let entry: unknown;
  try {
    entry = JSON.parse(text.split(kubeconfigPlaceholder).join(kubeconfigPath.replace(/["\\]/g, "\\$&")));
  } catch (error) {
    return { ok: false, reason: `the netconf template is not valid JSON: ${errorMessage(error)}` };
  }
  if (!isJsonObject(entry)) {
    return { ok: false, reason: "the netconf template must be a JSON object" };
  }
  if (!isRedirectEntry(entry)) {
    return {
      ok: false,
      reason: `the netconf template's type must be "meshcni" or "linkerd-cni", not ${JSON.stringify(entry.type)}`,
    };
  }
  // The plugin passes an entry with `probe` through, redirecting nothing: only the agent's own drop-in test may say it.
  if ("probe" in entry) {
    return {
      ok: false,
      reason: 'the netconf template sets "probe", the agent\'s own test of drop-ins: a plugin given it redirects nothing',
    };
  }
  // The plugin asks the agent there first (the agent serves where it says; a template's own value is replaced).
  const withSocket = agentSocket === undefined ? entry : { ...entry, agent_socket: agentSocket };
  return { ok: true, entry: withSocket, binaryName: entry.type as string };
}

/** The template the options name (flag, file, or the default), rendered for this host. */
export function loadTemplate(options: InstallOptions): Template {
  let text = options.template ?? defaultTemplate;
  if (options.templateFile) {
    try {
      text = readRegularFile(options.templateFile);
    } catch (error) {
      return { ok: false, reason: `cannot read the netconf template ${options.templateFile}: ${errorMessage(error)}` };
    }
  }
  return renderTemplate(text, installPaths(options).kubeconfigOnHost, options.agentSocket);
}
