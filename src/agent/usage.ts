import { repairPolicies } from "../audit/repair.js";
import { agentLogLevels } from "../log.js";
import { defaultStateDir } from "../state/records.js";

/** `meshcni install --help`: the agent's flags, and the environment Linkerd's installer sets. */
export const agentUsage = `meshcni install [options]   run the node agent (DaemonSet container)

Options (environment variable in brackets):
  --host-root DIR            where the host's filesystem is mounted [CONTAINER_MOUNT_PREFIX] (/host)
  --net-dir DIR              the host's CNI config dir [DEST_CNI_NET_DIR] (/etc/cni/net.d)
  --bin-dir DIR              the host's CNI bin dir [DEST_CNI_BIN_DIR] (/opt/cni/bin)
  --extra-bin-dir DIR        another dir the runtime finds plugins in (repeatable): the chain's
                             plugins are looked for there too
  --kubeconfig-name NAME     kubeconfig file in the net dir [KUBECONFIG_FILE_NAME] (ZZZ-meshcni-kubeconfig)
  --template JSON            the plugin's netconf entry [CNI_NETWORK_CONFIG]
  --template-file PATH       the same, from a file [CNI_NETWORK_CONFIG_FILE]
  --service-account-dir DIR  token and ca.crt (/var/run/secrets/kubernetes.io/serviceaccount)
  --source-binary PATH       the binary to install (this executable)
  --listen [HOST]:PORT       /readyz, /healthz and /metrics; no HOST: every address; "" turns it off
                             [MESHCNI_LISTEN] (127.0.0.1:9911; the DaemonSet's: :9911)
  --resync-seconds N         re-check everything this often, besides watching (10)
  --watch-timeout-seconds N  each watch of the API asks to end after N to 2N s, then resumes (300)
  --on-stop MODE             on SIGTERM: auto (uninstall only when the agent's DaemonSet is gone or
                             being deleted; a restart or rollout keeps everything), keep, uninstall (auto)
  --node NAME                this node [NODE_NAME]; without it, no audit and no taint
  --repair POLICY            unprotected meshed pods: ${repairPolicies.join(", ")} (redirect)
  --max-evictions-per-minute N   with --repair evict, at most this many per minute on the node (2)
  --repair-exclude-namespaces NS,NS   never act on pods of these namespaces
  --evict-namespaces NS,NS   with --repair evict, evict only in these namespaces (skip the others);
                             "" (the default): any but kube-system, kube-public, kube-node-lease
  --audit-seconds N          audit every pod of the node this often, besides the watch (60)
  --state-dir DIR            the plugin's state_dir on the host (${defaultStateDir})
  --netns-dir DIR            where the runtime keeps pod netns on the host (repeatable; /var/run/netns)
  --cri-socket PATH          the container runtime's CRI socket on the host, asked for each pod's netns
                             (auto: containerd's or CRI-O's default, the first there; "": none)
  --startup-taint TAINT      remove key[=value][:Effect] from this node once ready ("": none)
  --restore-taint            put the startup taint back while not ready
  --log-level LEVEL          ${agentLogLevels.join(", ")} [LOG_LEVEL] (info)
  --plugin-service-account NS/NAME   whose token (minted, TokenRequest) the plugin's kubeconfig holds
                             ([POD_NAMESPACE or meshcni]/meshcni-plugin)
  --plugin-token-seconds N   the minted token's life, renewed at 80% (3600; 600 to 86400)
  --agent-socket PATH        where the plugin asks the agent for pods, on the host; "" turns it off
                             (<state-dir>/agent/plugin.sock; needs --node)
Own pod (never repaired; its DaemonSet decides --on-stop auto): POD_NAMESPACE and POD_NAME.
API address: KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT, KUBERNETES_SERVICE_PROTOCOL (https);
KUBE_CA_FILE overrides the CA, SKIP_TLS_VERIFY=true skips verification.
`;

/** `meshcni ready --help`: what it reads of the agent's flags (it takes them all, so a probe can pass the agent's own). */
export const readyUsage = `meshcni ready [options]   is the node agent ready? (a probe, or by hand on the node)

Asks the agent's /readyz at --listen; says why not from what the disk shows: meshcni's binary,
its kubeconfig and its entry in the active config. Exit 0 when ready, 1 when not, 2 on a usage error.

  --listen [HOST]:PORT       where the agent serves /readyz [MESHCNI_LISTEN] (127.0.0.1:9911; "": ask the disk only)
  --host-root DIR            where the host's filesystem is mounted [CONTAINER_MOUNT_PREFIX] (/host)
  --net-dir DIR              the host's CNI config dir [DEST_CNI_NET_DIR] (/etc/cni/net.d)
  --bin-dir DIR              the host's CNI bin dir [DEST_CNI_BIN_DIR] (/opt/cni/bin)
  --kubeconfig-name NAME     the plugin's kubeconfig in the net dir [KUBECONFIG_FILE_NAME] (ZZZ-meshcni-kubeconfig)
Every other flag of meshcni install is accepted and changes nothing here.
`;
