// The peers `npm run bench cluster` chains after the primary in meshcni's place: linkerd-cni's
// pattern (bench/baselines/linkerd-pattern), and Istio's CNI plugin (istio.io/istio/cni/cmd/istio-cni,
// built by build/cluster/components.sh with MESHCNI_ISTIO=1) in sidecar mode as its node agent
// installs it, for pods as Istio's injector writes them for it (no istio-init).
import { chmodSync, copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { V1Pod } from "@kubernetes/client-node";
import type { RealCluster } from "../test/kit/cluster/cluster.js";
import { apiserverUrl } from "../test/kit/cluster/families.js";
import { probeImage } from "../test/kit/cluster/images.js";
import { paths } from "../test/kit/cluster/layout.js";
import { primaryConflist, primaryConflistPath } from "../test/kit/cluster/node.js";
import { tokenKubeconfig } from "../test/kit/cluster/tokens.js";
import { sleep } from "../test/kit/common.js";
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

/** Where its node agent keeps the plugin's kubeconfig (`cni_agent_run_dir`, /var/run/istio-cni on a node). */
const runDir = join(paths.dir, "istio-cni");

/** The banners of the proxy stand-in: a connection it answers went through Istio's redirect. */
export const istioInbound = "istio-inbound";

/**
 * Chains istio-cni as its node agent does in sidecar mode: the binary in the CNI bin dir, a
 * kubeconfig in its run dir with a token of a ServiceAccount that may get pods (what the
 * plugin asks), and its entry last in the primary's conflist.
 */
export async function chainIstioCni(cluster: RealCluster): Promise<void> {
  const built = cluster.bin.istio;
  if (!built) throw new Error("Istio's CNI plugin is built when MESHCNI_ISTIO=1 (build/cluster/components.sh)");
  copyFileSync(join(built, "istio-cni"), join(paths.cniBinDir, "istio-cni"));
  chmodSync(join(paths.cniBinDir, "istio-cni"), 0o755);
  const token = await peerToken(cluster, "istio-cni", "pods");
  mkdirSync(runDir, { recursive: true });
  writeFileSync(join(runDir, "istio-cni-kubeconfig"), JSON.stringify(tokenKubeconfig("istio-cni", token)), { mode: 0o600 });
  const entry = {
    type: "istio-cni",
    plugin_log_level: "info",
    cni_agent_run_dir: runDir,
    ambient_enabled: false,
    exclude_namespaces: ["kube-system"],
    pod_namespace: "istio-system",
  };
  const conflist = primaryConflist() as { plugins: object[] };
  writeFileSync(primaryConflistPath, JSON.stringify({ ...conflist, plugins: [...conflist.plugins, entry] }));
  // containerd reloads the config dir on its own events: the next pod's ADD runs the new chain.
  await sleep(2000);
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
