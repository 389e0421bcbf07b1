import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { projectRoot } from "../paths.js";
import type { RealCluster } from "./cluster.js";
import { apiserverUrl } from "./families.js";
import { nodeName, paths } from "./layout.js";
import type { Components } from "./teardown.js";

/**
 * Calico as the node's primary CNI, installed as calico-node's install-cni init container
 * installs it: Calico's own installer (cni-plugin/cmd/install, built from the Go module
 * proxy by components.sh) copies its image's plugins into the node's bin dir and writes
 * 10-calico.conflist from its template, in place. No calico-node runs (no Felix, no BGP):
 * what it would otherwise make in the API (the ClusterInformation) and on the node (the
 * plugin's kubeconfig) the kit makes. IPAM is host-local from the Node's podCIDR, which the
 * controller manager allocates (control-plane.ts) as on a cluster that uses it.
 */

export const calicoConflistName = "10-calico.conflist";
/** What install-cni's image holds in /opt/cni/bin besides the installer; calico-ipam is calico's binary under that name (argv[0] picks). */
export const calicoImagePlugins = ["calico", "calico-ipam", "host-local", "loopback", "portmap"];
/** The kubeconfig the conflist names (__KUBECONFIG_FILEPATH__: CNI_NET_DIR/calico-kubeconfig). */
export const calicoKubeconfigPath = join(paths.cniConfDir, "calico-kubeconfig");
const namespace = "kube-system";
const installRoot = join(paths.dir, "calico-install");

/** The template calico.yaml's ConfigMap holds, but host-local IPAM from the Node's podCIDR (no Calico IPAM without calico-node's pools) and the nodename file optional (no calico-node writes it). */
function networkConfigTemplate(cniVersion: string): string {
  const calico = {
    type: "calico",
    log_level: "info",
    log_file_path: "__LOG_FILE_PATH__",
    datastore_type: "kubernetes",
    nodename: "__KUBERNETES_NODE_NAME__",
    nodename_file_optional: true,
    mtu: "__CNI_MTU__",
    ipam: { type: "host-local", subnet: "usePodCidr", dataDir: paths.ipamDir },
    policy: { type: "k8s" },
    kubernetes: { kubeconfig: "__KUBECONFIG_FILEPATH__" },
  };
  const portmap = { type: "portmap", snat: true, capabilities: { portMappings: true } };
  // calico.yaml's template has __CNI_MTU__ bare: a number once the installer replaces it.
  return JSON.stringify({ name: "k8s-pod-network", cniVersion, plugins: [calico, portmap] }, null, 2).replace(
    '"__CNI_MTU__"',
    "__CNI_MTU__",
  );
}

/** install-cni's filesystem: the image's /opt/cni/bin, and /host/… where the pod mounts the node's CNI dirs. */
export function prepareCalicoInstaller(bin: Components): void {
  const source = join(installRoot, "opt/cni/bin");
  for (const dir of [source, join(installRoot, "host/opt/cni/bin"), join(installRoot, "host/etc/cni/net.d")])
    mkdirSync(dir, { recursive: true });
  const calico = bin.calico;
  if (!calico) throw new Error("the calico leg needs Calico built: components.sh builds it when MESHCNI_PRIMARY=calico");
  copyFileSync(join(calico, "install"), join(source, "install"));
  copyFileSync(join(calico, "calico"), join(source, "calico"));
  copyFileSync(join(calico, "calico"), join(source, "calico-ipam"));
  for (const plugin of ["host-local", "loopback", "portmap"]) copyFileSync(join(bin["cni-plugins"], plugin), join(source, plugin));
}

/**
 * Runs Calico's installer as install-cni does (SLEEP=false: it exits once written), in a
 * mount namespace of its own whose root is the installer's filesystem, the node's CNI dirs
 * bind-mounted on its fixed /host paths: nothing of the host's mounts changes. It gets no
 * service-account token, so it writes no kubeconfig (writeCalicoKubeconfig does). Resolves
 * when it has exited, with the time it exited (performance.timeOrigin-based, ms since epoch).
 */
export async function runCalicoInstaller(cniVersion = "0.3.1"): Promise<number> {
  const script =
    'mount --bind "$1" "$3/host/opt/cni/bin" && mount --bind "$2" "$3/host/etc/cni/net.d" && exec chroot "$3" /opt/cni/bin/install';
  const result = await execa(
    "unshare",
    ["--mount", "--propagation", "private", "--", "sh", "-c", script, "sh", paths.cniBinDir, paths.cniConfDir, installRoot],
    {
      env: {
        PATH: "/usr/sbin:/usr/bin:/sbin:/bin",
        CNI_CONF_NAME: calicoConflistName,
        CNI_NET_DIR: paths.cniConfDir,
        CNI_NETWORK_CONFIG: networkConfigTemplate(cniVersion),
        KUBERNETES_NODE_NAME: nodeName,
        CNI_MTU: "1500",
        LOG_FILE_PATH: join(paths.logs, "calico-cni.log"),
        SLEEP: "false",
      },
      extendEnv: false,
      reject: false,
    },
  );
  const exited = Date.now();
  if (result.exitCode !== 0) throw new Error(`Calico's installer exited ${result.exitCode}: ${result.stderr}`);
  return exited;
}

/** Calico's CRD for ClusterInformation, from the module components.sh built (never copied here). */
async function clusterInformationCrd(): Promise<string> {
  const wrapper = join(projectRoot, "build/cluster/calico");
  const env = { PATH: `/usr/local/go/bin:${process.env.PATH}`, GOTOOLCHAIN: "local", GOFLAGS: "-mod=mod" };
  const { stdout } = await execa("go", ["list", "-m", "-f", "{{.Dir}}", "github.com/projectcalico/calico"], { cwd: wrapper, env });
  return readFileSync(join(stdout.trim(), "libcalico-go/config/crd/crd.projectcalico.org_clusterinformations.yaml"), "utf8");
}

/** calico.yaml's identity of the CNI plugin: its ServiceAccount, ClusterRole and binding. */
const pluginIdentity = [
  { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "calico-cni-plugin", namespace } },
  {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: { name: "calico-cni-plugin" },
    rules: [
      { apiGroups: [""], resources: ["pods", "nodes", "namespaces"], verbs: ["get"] },
      { apiGroups: [""], resources: ["pods/status"], verbs: ["patch"] },
      {
        apiGroups: ["crd.projectcalico.org"],
        resources: ["blockaffinities", "ipamblocks", "ipamhandles", "clusterinformations", "ippools", "ipreservations", "ipamconfigs"],
        verbs: ["get", "list", "create", "update", "delete"],
      },
    ],
  },
  {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name: "calico-cni-plugin" },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "calico-cni-plugin" },
    subjects: [{ kind: "ServiceAccount", name: "calico-cni-plugin", namespace }],
  },
];

/**
 * What calico-node would have made in the API before any pod starts: the ClusterInformation
 * `default` with datastoreReady (the plugin dereferences it: nil crashes ADD), and the
 * plugin's identity; then the plugin's kubeconfig.
 */
export async function applyCalicoObjects(cluster: RealCluster): Promise<void> {
  await cluster.kubectl(["apply", "-f", "-"], await clusterInformationCrd());
  await cluster.kubectl(["wait", "--for=condition=Established", "crd/clusterinformations.crd.projectcalico.org", "--timeout=30s"]);
  const information = { clusterType: "k8s,kdd", calicoVersion: "v3.28.5", datastoreReady: true };
  const objects = [
    { apiVersion: "crd.projectcalico.org/v1", kind: "ClusterInformation", metadata: { name: "default" }, spec: information },
  ];
  await cluster.kubectl(["apply", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "List", items: [...objects, ...pluginIdentity] }));
  await writeCalicoKubeconfig(cluster);
}

/**
 * The plugin's kubeconfig as calico-node's token watch writes it: a 24 h token of
 * calico-cni-plugin. Written here rather than by the installer because its template's
 * server `https://[IPv4]:port` is refused by Go 1.26's net/url (only IPv6 in brackets), the
 * Go these binaries are built with; calico-node's own rewrite has no brackets either.
 */
async function writeCalicoKubeconfig(cluster: RealCluster): Promise<void> {
  const token = (await cluster.kubectl(["create", "token", "calico-cni-plugin", "-n", namespace, "--duration=24h"])).trim();
  const ca = readFileSync(join(paths.pki, "ca.crt")).toString("base64");
  writeFileSync(
    calicoKubeconfigPath,
    `apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "${apiserverUrl()}", certificate-authority-data: "${ca}"}
users:
- name: calico
  user: {token: "${token}"}
contexts:
- name: calico-context
  context: {cluster: local, user: calico}
current-context: calico-context
`,
    { mode: 0o600 },
  );
}
