import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { apiserverUrl } from "./families.js";
import { kubernetesServiceIp, kubernetesServiceIp6, nodeIp, nodeIp6, nodeName, paths } from "./layout.js";

/** A client identity of the cluster: its certificate's subject, and the kubeconfig file named after it. */
export interface Identity {
  /** The file stem: <stem>.crt, <stem>.key, <stem>.kubeconfig. */
  stem: string;
  subject: string;
  /** Also a serving certificate, for these SANs (the kubelet's). */
  serving?: string;
}

/** Who talks to the API server with a certificate (Node and RBAC authorization read the subject). */
export const identities = {
  admin: { stem: "admin", subject: "/O=system:masters/CN=admin" },
  controllerManager: { stem: "kube-controller-manager", subject: "/CN=system:kube-controller-manager" },
  scheduler: { stem: "kube-scheduler", subject: "/CN=system:kube-scheduler" },
  proxy: { stem: "kube-proxy", subject: "/CN=system:kube-proxy" },
  kubelet: {
    stem: "kubelet",
    subject: `/O=system:nodes/CN=system:node:${nodeName}`,
    serving: `IP:${nodeIp},IP:${nodeIp6},DNS:${nodeName}`,
  },
  apiserverKubeletClient: { stem: "apiserver-kubelet-client", subject: "/O=system:masters/CN=kube-apiserver-kubelet-client" },
} satisfies Record<string, Identity>;

const days = "7";

async function openssl(...args: string[]): Promise<void> {
  await execa("openssl", args, { cwd: paths.pki });
}

/** A P-256 key and a certificate for `subject`, signed by `ca` with these extensions (self-signed, a CA, without). */
async function certificate(stem: string, subject: string, extensions: string, ca?: string): Promise<void> {
  const key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", `${stem}.key`, "-subj", subject];
  if (!ca) {
    await openssl("req", "-x509", ...key, "-out", `${stem}.crt`, "-days", days);
    return;
  }
  writeFileSync(join(paths.pki, `${stem}.ext`), extensions);
  await openssl("req", ...key, "-out", `${stem}.csr`);
  await openssl(
    ...["x509", "-req", "-in", `${stem}.csr`, "-CA", `${ca}.crt`, "-CAkey", `${ca}.key`, "-CAcreateserial"],
    ...["-out", `${stem}.crt`, "-days", days, "-extfile", `${stem}.ext`],
  );
}

/**
 * The cluster's PKI, made with openssl once per cluster dir: a CA; the API server's serving
 * certificate (its Service names, the node's address, the `kubernetes` ClusterIP); a client
 * certificate and kubeconfig per identity (and per kubelet of `nodes`, with several); the
 * service-account signing key pair.
 */
export async function makePki(nodes: Identity[] = []): Promise<void> {
  if (existsSync(join(paths.pki, "sa.pub"))) return;
  mkdirSync(paths.pki, { recursive: true });
  await certificate("ca", "/CN=meshcni-cluster-ca", "");
  const names = ["kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost"];
  const sans = [
    ...names.map((name) => `DNS:${name}`),
    "IP:127.0.0.1",
    `IP:${nodeIp}`,
    `IP:${nodeIp6}`,
    `IP:${kubernetesServiceIp}`,
    `IP:${kubernetesServiceIp6}`,
  ].join(",");
  await certificate(
    "apiserver",
    "/CN=kube-apiserver",
    `subjectAltName=${sans}\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature`,
    "ca",
  );
  for (const identity of [...(Object.values(identities) as Identity[]), ...nodes]) await issue(identity);
  await openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "sa.key");
  await openssl("pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub");
}

/** An identity's certificate, signed by the cluster's CA, and its kubeconfig: at the start, or for a node joining later. */
export async function issue(identity: Identity): Promise<void> {
  const usage = identity.serving
    ? `subjectAltName=${identity.serving}\nextendedKeyUsage=clientAuth,serverAuth`
    : "extendedKeyUsage=clientAuth";
  await certificate(identity.stem, identity.subject, usage, "ca");
  writeFileSync(join(paths.dir, `${identity.stem}.kubeconfig`), kubeconfig(identity.stem));
}

/** A kubeconfig for one identity's client certificate. */
function kubeconfig(stem: string): string {
  const pki = paths.pki;
  return `apiVersion: v1
kind: Config
clusters:
  - name: meshcni-cluster
    cluster: {server: "${apiserverUrl()}", certificate-authority: "${pki}/ca.crt"}
users:
  - name: ${stem}
    user: {client-certificate: "${pki}/${stem}.crt", client-key: "${pki}/${stem}.key"}
contexts:
  - name: meshcni-cluster
    context: {cluster: meshcni-cluster, user: ${stem}}
current-context: meshcni-cluster
`;
}

export const kubeconfigOf = (identity: Identity) => join(paths.dir, `${identity.stem}.kubeconfig`);
