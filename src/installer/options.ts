import { parseArgs } from "node:util";
import { join } from "node:path";

/**
 * The agent's settings: flags, else the environment variables Linkerd's installer reads
 * (so its DaemonSet env carries over), else defaults. Host paths are mounted under
 * hostRoot inside the container; configs name them as the host sees them.
 */
export interface InstallerOptions {
  hostRoot: string;
  netDir: string;
  binDir: string;
  kubeconfigName: string;
  template: string | undefined;
  templateFile: string | undefined;
  serviceAccountDir: string;
  sourceBinary: string;
  listen: string;
  removeBinary: boolean;
  resyncSeconds: number;
  apiProtocol: string;
  apiHost: string | undefined;
  apiPort: string | undefined;
  caFile: string | undefined;
  skipTlsVerify: boolean;
}

export const installerUsage = `meshcni install [options]   run the node agent (DaemonSet container)
meshcni ready [options]     exit 0 when the binary, kubeconfig and chain entry are in place

Options (environment variable in brackets):
  --host-root DIR            where the host's filesystem is mounted [CONTAINER_MOUNT_PREFIX] (/host)
  --net-dir DIR              the host's CNI config dir [DEST_CNI_NET_DIR] (/etc/cni/net.d)
  --bin-dir DIR              the host's CNI bin dir [DEST_CNI_BIN_DIR] (/opt/cni/bin)
  --kubeconfig-name NAME     kubeconfig file in the net dir [KUBECONFIG_FILE_NAME] (ZZZ-meshcni-kubeconfig)
  --template JSON            the plugin's netconf entry [CNI_NETWORK_CONFIG]
  --template-file PATH       the same, from a file [CNI_NETWORK_CONFIG_FILE]
  --service-account-dir DIR  token and ca.crt (/var/run/secrets/kubernetes.io/serviceaccount)
  --source-binary PATH       the binary to install (this executable)
  --listen HOST:PORT         /readyz and /metrics; "" turns it off [MESHCNI_LISTEN] (127.0.0.1:9911)
  --resync-seconds N         re-check everything this often, besides watching (10)
  --remove-binary            on SIGTERM also remove the binary (a full uninstall)
API address: KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT, KUBERNETES_SERVICE_PROTOCOL (https);
KUBE_CA_FILE overrides the CA, SKIP_TLS_VERIFY=true skips verification.
`;

export function parseInstallerOptions(argv: string[], env: NodeJS.ProcessEnv, execPath: string): InstallerOptions {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      "host-root": { type: "string" },
      "net-dir": { type: "string" },
      "bin-dir": { type: "string" },
      "kubeconfig-name": { type: "string" },
      template: { type: "string" },
      "template-file": { type: "string" },
      "service-account-dir": { type: "string" },
      "source-binary": { type: "string" },
      listen: { type: "string" },
      "resync-seconds": { type: "string" },
      "remove-binary": { type: "boolean", default: false },
    },
  });
  const resyncSeconds = Number(values["resync-seconds"] ?? "10");
  if (!Number.isFinite(resyncSeconds) || resyncSeconds <= 0) {
    throw new Error(`--resync-seconds must be a positive number, not ${JSON.stringify(values["resync-seconds"])}`);
  }
  const serviceAccountDir = values["service-account-dir"] ?? "/var/run/secrets/kubernetes.io/serviceaccount";
  return {
    hostRoot: values["host-root"] ?? env.CONTAINER_MOUNT_PREFIX ?? "/host",
    netDir: values["net-dir"] ?? env.DEST_CNI_NET_DIR ?? "/etc/cni/net.d",
    binDir: values["bin-dir"] ?? env.DEST_CNI_BIN_DIR ?? "/opt/cni/bin",
    kubeconfigName: values["kubeconfig-name"] ?? env.KUBECONFIG_FILE_NAME ?? "ZZZ-meshcni-kubeconfig",
    template: values.template ?? (env.CNI_NETWORK_CONFIG || undefined),
    templateFile: values["template-file"] ?? (env.CNI_NETWORK_CONFIG_FILE || undefined),
    serviceAccountDir,
    sourceBinary: values["source-binary"] ?? execPath,
    listen: values.listen ?? env.MESHCNI_LISTEN ?? "127.0.0.1:9911",
    removeBinary: values["remove-binary"] ?? false,
    resyncSeconds,
    apiProtocol: env.KUBERNETES_SERVICE_PROTOCOL || "https",
    apiHost: env.KUBERNETES_SERVICE_HOST || undefined,
    apiPort: env.KUBERNETES_SERVICE_PORT || undefined,
    caFile: env.KUBE_CA_FILE || join(serviceAccountDir, "ca.crt"),
    skipTlsVerify: env.SKIP_TLS_VERIFY === "true",
  };
}

/** Where the agent reads and writes, inside its container, and how configs name them. */
export function installerPaths(options: InstallerOptions) {
  const netDir = join(options.hostRoot || "/", options.netDir);
  const kubeconfigOnHost = join(options.netDir, options.kubeconfigName);
  return {
    netDir,
    binDir: join(options.hostRoot || "/", options.binDir),
    kubeconfig: join(netDir, options.kubeconfigName),
    kubeconfigOnHost,
  };
}
