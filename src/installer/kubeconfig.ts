import { existsSync } from "node:fs";
import { readRegularFile } from "../file-open.js";
import { writeAtomic } from "../files.js";

/** What a kubeconfig is made of: a token, the CA, and (ApiEndpoint) the API's address. */
export interface ServiceAccount {
  token: string;
  caPem: string | undefined;
}

export interface ApiEndpoint {
  protocol: string;
  host: string;
  port: string;
  skipTlsVerify: boolean;
}

/**
 * A kubeconfig (the plugin's has linkerd-cni's shape), as JSON: valid YAML for kubectl,
 * and the plugin reads it without loading a YAML parser per pod start. IPv6 hosts are
 * bracketed.
 */
export function renderKubeconfig(account: ServiceAccount, api: ApiEndpoint): string {
  const host = api.host.includes(":") && !api.host.startsWith("[") ? `[${api.host}]` : api.host;
  const tls = api.skipTlsVerify
    ? { "insecure-skip-tls-verify": true }
    : account.caPem
      ? { "certificate-authority-data": Buffer.from(account.caPem).toString("base64") }
      : {};
  const config = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "local", cluster: { server: `${api.protocol}://${host}:${api.port}`, ...tls } }],
    users: [{ name: "meshcni", user: { token: account.token } }],
    contexts: [{ name: "meshcni", context: { cluster: "local", user: "meshcni" } }],
    "current-context": "meshcni",
  };
  return `${JSON.stringify(config, null, 2)}\n`;
}

/** Where and what the agent writes as the plugin's kubeconfig. */
export interface KubeconfigSource {
  path: string;
  /** The plugin's token: minted for its own ServiceAccount, never the agent's. */
  token: string;
  caPem: string | undefined;
  api: ApiEndpoint | undefined;
}

/**
 * Writes the kubeconfig when the token, CA or address changed (mode 0600, atomically);
 * says whether it did. Throws, naming the problem, when it cannot be made. The token is
 * never logged.
 */
export function syncKubeconfig(source: KubeconfigSource): "written" | "rewritten" | "unchanged" {
  if (!source.api) throw new Error("KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are needed for the kubeconfig");
  const content = renderKubeconfig({ token: source.token, caPem: source.caPem }, source.api);
  const current = existsSync(source.path) ? readRegularFile(source.path) : undefined;
  if (current === content) return "unchanged";
  writeAtomic(source.path, content, 0o600);
  return current === undefined ? "written" : "rewritten";
}
