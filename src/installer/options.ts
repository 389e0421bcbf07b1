import { join } from "node:path";
import { parseArgs } from "node:util";
import { type RepairPolicy, repairPolicies } from "../audit/repair.js";
import type { PodKey } from "../pod-key.js";
import { defaultStateDir } from "../state/records.js";
import { parseTaint, type TaintSpec } from "./taint.js";

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
  /** The node this agent runs on; audit, repair and the taint need it. */
  node: string | undefined;
  repair: RepairPolicy;
  startupTaint: TaintSpec | undefined;
  restoreTaint: boolean;
  auditSeconds: number;
  /** The plugin's state_dir, as the host sees it. */
  stateDir: string;
  self: PodKey | undefined;
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
  --node NAME                this node [NODE_NAME]; without it, no audit and no taint
  --repair POLICY            unprotected meshed pods: none, label or delete (delete)
  --audit-seconds N          audit every pod of the node this often, besides the watch (60)
  --state-dir DIR            the plugin's state_dir on the host (${defaultStateDir})
  --startup-taint TAINT      remove key[=value][:Effect] from this node once ready
  --restore-taint            put the startup taint back while not ready
Own pod (never repaired): POD_NAMESPACE and POD_NAME.
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
      node: { type: "string" },
      repair: { type: "string" },
      "audit-seconds": { type: "string" },
      "state-dir": { type: "string" },
      "startup-taint": { type: "string" },
      "restore-taint": { type: "boolean", default: false },
    },
  });
  const repair = (values.repair ?? "delete") as RepairPolicy;
  if (!repairPolicies.includes(repair))
    throw new Error(`--repair must be one of ${repairPolicies.join(", ")}, not ${JSON.stringify(values.repair)}`);
  const auditSeconds = Number(values["audit-seconds"] ?? "60");
  if (!Number.isFinite(auditSeconds) || auditSeconds <= 0) {
    throw new Error(`--audit-seconds must be a positive number, not ${JSON.stringify(values["audit-seconds"])}`);
  }
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
    node: values.node ?? (env.NODE_NAME || undefined),
    repair,
    startupTaint: values["startup-taint"] === undefined ? undefined : parseTaint(values["startup-taint"]),
    restoreTaint: values["restore-taint"] ?? false,
    auditSeconds,
    stateDir: values["state-dir"] ?? defaultStateDir,
    self: env.POD_NAMESPACE && env.POD_NAME ? { namespace: env.POD_NAMESPACE, name: env.POD_NAME } : undefined,
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
