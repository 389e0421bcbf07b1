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

/** A kubeconfig for the plugin (same shape as linkerd-cni's). IPv6 hosts are bracketed. */
export function renderKubeconfig(account: ServiceAccount, api: ApiEndpoint): string {
  const host = api.host.includes(":") && !api.host.startsWith("[") ? `[${api.host}]` : api.host;
  const tls = api.skipTlsVerify
    ? "    insecure-skip-tls-verify: true"
    : account.caPem
      ? `    certificate-authority-data: ${Buffer.from(account.caPem).toString("base64")}`
      : undefined;
  return [
    "# Kubeconfig for the meshcni CNI plugin, written by `meshcni install`.",
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    "- name: local",
    "  cluster:",
    `    server: ${api.protocol}://${host}:${api.port}`,
    ...(tls ? [tls] : []),
    "users:",
    "- name: meshcni",
    "  user:",
    `    token: ${account.token}`,
    "contexts:",
    "- name: meshcni",
    "  context:",
    "    cluster: local",
    "    user: meshcni",
    "current-context: meshcni",
    "",
  ].join("\n");
}
