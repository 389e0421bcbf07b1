// The peers `npm run bench cluster` chains after the primary in meshcni's place: linkerd-cni's
// pattern (bench/baselines/linkerd-pattern), and Istio's CNI plugin (istio.io/istio/cni/cmd/istio-cni,
// and its node agent install-cni, built by build/cluster/components.sh with MESHCNI_ISTIO=1)
// in sidecar mode, installed from Istio's own chart, for pods as Istio's injector writes them
// for it (no istio-init).
import { chmodSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { V1Pod } from "@kubernetes/client-node";
import { execa } from "execa";
import { writeOciArchive } from "../build/oci.js";
import type { RealCluster } from "../test/kit/cluster/cluster.js";
import { apiserverUrl } from "../test/kit/cluster/families.js";
import { probeImage } from "../test/kit/cluster/images.js";
import { paths } from "../test/kit/cluster/layout.js";
import { chainedTypes, primaryConflist, primaryConflistPath } from "../test/kit/cluster/node.js";
import { sleep, until } from "../test/kit/common.js";
import { projectRoot } from "../test/kit/paths.js";
import { buildGoPattern, perRuleLines } from "./plugin-baselines.js";

/** The audit log's user of a ServiceAccount of the default namespace (a peer's). */
export const serviceAccountUser = (name: string) => `system:serviceaccount:default:${name}`;

/** linkerd-cni's pattern (bench/baselines/linkerd-pattern) as the runtime calls a chained plugin: ADD does its work, any other verb nothing. */
export async function chainLinkerdPattern(cluster: RealCluster): Promise<void> {
  const binary = await buildGoPattern();
  const token = join(paths.dir, "linkerd-cni.token");
  writeFileSync(token, await peerToken(cluster, "linkerd-cni", "pods,namespaces"));
  const rules = join(paths.dir, "linkerd-cni.rules");
  writeFileSync(rules, `${perRuleLines}\n`);
  const wrapper = join(paths.cniBinDir, "linkerd-pattern");
  writeFileSync(
    wrapper,
    `#!/bin/sh
case "$CNI_COMMAND" in
ADD) exec ${binary} -server ${apiserverUrl()} -token-file ${token} -ca-file ${paths.pki}/ca.crt -rules ${rules} -backend nft ;;
VERSION) echo '{"cniVersion":"1.0.0","supportedVersions":["0.3.1","0.4.0","1.0.0"]}' ;;
esac
`,
  );
  chmodSync(wrapper, 0o755);
  const conflist = primaryConflist() as { plugins: object[] };
  writeFileSync(primaryConflistPath, JSON.stringify({ ...conflist, plugins: [...conflist.plugins, { type: "linkerd-pattern" }] }));
  await sleep(2000);
}

/** A token of a ServiceAccount `name` of the default namespace that may get `resources` (what a peer's plugin reads). */
async function peerToken(cluster: RealCluster, name: string, resources: string): Promise<string> {
  await cluster.kubectl(["create", "serviceaccount", name, "-n", "default"]);
  await cluster.kubectl(["create", "clusterrole", name, "--verb=get", `--resource=${resources}`]);
  await cluster.kubectl(["create", "clusterrolebinding", name, `--clusterrole=${name}`, `--serviceaccount=default:${name}`]);
  return (await cluster.kubectl(["create", "token", name, "-n", "default", "--duration=2h"])).trim();
}

/** Where Istio's chart mounts its node agent's run dir (the plugin's kubeconfig, its log socket): fixed in the chart. */
const runDir = "/var/run/istio-cni";
const istioNamespace = "istio-system";
const installCniImage = "meshcni.test/install-cni:bench";

/** The banners of the proxy stand-in: a connection it answers went through Istio's redirect. */
export const istioInbound = "istio-inbound";

/** The audit log's user of Istio's node agent and plugin (the plugin uses the agent's token): split by user agent. */
export const istioUser = `system:serviceaccount:${istioNamespace}:istio-cni`;

/** Istio's own chart (manifests/charts/istio-cni of the module built), rendered for this node as an operator would install it. */
async function istioManifests(cluster: RealCluster): Promise<string> {
  const { stdout } = await execa("go", ["list", "-m", "-json", "istio.io/istio"], {
    cwd: join(projectRoot, "build/cluster/istio"),
    env: { PATH: `/usr/local/go/bin:${process.env.PATH}` },
  });
  const chart = join((JSON.parse(stdout) as { Dir: string }).Dir, "manifests/charts/istio-cni");
  const values = [
    ...["image", installCniImage, "pullPolicy", "Never", "global.logging.level", "info"],
    ...["cniBinDir", paths.cniBinDir, "cniConfDir", paths.cniConfDir, "cniNetnsDir", paths.netnsDir],
  ];
  const sets = values.flatMap((value, i) => (i % 2 ? [] : ["--set", `${value}=${values[i + 1]}`]));
  return (await execa(join(cluster.bin.helm, "helm"), ["template", "istio-cni", chart, "--namespace", istioNamespace, ...sets])).stdout;
}

/**
 * Installs Istio's CNI plugin in sidecar mode with its own node agent (install-cni) from
 * its own chart: an image of the two binaries built here (Istio's holds iptables too, for
 * repairing pods whose istio-validation failed: none here), its DaemonSet, RBAC and config;
 * awaited until its entry is in the primary's conflist.
 */
export async function installIstioCni(cluster: RealCluster): Promise<void> {
  const built = cluster.bin.istio;
  if (!built) throw new Error("Istio's CNI plugin and node agent are built when MESHCNI_ISTIO=1 (build/cluster/components.sh)");
  const archive = join(paths.dir, "install-cni.tar");
  await writeOciArchive(archive, installCniImage, [
    {
      os: "linux",
      architecture: process.arch === "arm64" ? "arm64" : "amd64",
      entries: [
        { path: "usr/local/bin/install-cni", source: join(built, "install-cni"), mode: 0o755 },
        { path: "opt/cni/bin/istio-cni", source: join(built, "istio-cni"), mode: 0o755 },
      ],
      config: { Env: ["PATH=/usr/local/bin:/usr/bin:/bin"] },
    },
  ]);
  await cluster.ctr("images", "import", "--all-platforms", archive);
  await cluster.kubectl(["apply", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name: istioNamespace } }));
  await cluster.kubectl(["apply", "-f", "-"], await istioManifests(cluster));
  await cluster.kubectl(["-n", istioNamespace, "rollout", "status", "daemonset/istio-cni-node", "--timeout=120s"]);
  await until(() => chainedTypes().includes("istio-cni"), 60_000, 250);
}

/** Deletes Istio's DaemonSet and the rest of its chart: its node agent takes its entry, binary and kubeconfig away as it stops. */
export async function removeIstioCni(cluster: RealCluster): Promise<void> {
  await cluster.kubectl(["delete", "--wait", "-f", "-"], await istioManifests(cluster));
  await until(() => !chainedTypes().includes("istio-cni"), 60_000, 250);
  rmSync(runDir, { recursive: true, force: true });
}

/**
 * A pod as Istio's injector writes one where its CNI plugin is installed: the app, and
 * `istio-proxy` as a native sidecar (UID 1337) answering on 15006 (inbound) and 15001
 * (outbound), the sidecar status annotation the plugin looks for, and no istio-init.
 */
export function istioPod(name: string, namespace: string): V1Pod {
  const probe = (container: string, listeners: string[]) => ({
    name: container,
    image: probeImage,
    imagePullPolicy: "Never",
    args: ["serve", ...listeners],
  });
  const proxy = { ...probe("istio-proxy", [`:15006=${istioInbound}`, ":15001=istio-outbound"]), securityContext: { runAsUser: 1337 } };
  const status = { initContainers: null, containers: ["istio-proxy"], volumes: [], imagePullSecrets: null, revision: "default" };
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace, labels: { app: "istio-bench" }, annotations: { "sidecar.istio.io/status": JSON.stringify(status) } },
    spec: {
      terminationGracePeriodSeconds: 1,
      initContainers: [{ ...proxy, restartPolicy: "Always" }],
      containers: [probe("app", [`:8080=${name}`])],
    },
  } as V1Pod;
}
