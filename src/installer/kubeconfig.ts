/** What the kubeconfig is made of: the pod's service account and the API's address. */
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
 * A kubeconfig for the plugin (same content as linkerd-cni's), written as JSON: valid
 * YAML for kubectl, and the plugin reads it without loading a YAML parser per pod start.
 * IPv6 hosts are bracketed.
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
