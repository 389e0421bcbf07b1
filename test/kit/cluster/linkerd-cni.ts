import { chmodSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { linkerdDefaults } from "../../../src/mesh/defaults.js";
import { buildGoPattern } from "../linkerd/pattern.js";
import { type LinkerdNetconf, linkerdCommands } from "../linkerd/port.js";
import type { RealCluster } from "./cluster.js";
import { apiserverUrl } from "./families.js";
import { paths } from "./layout.js";
import { primaryConflistPath } from "./node.js";

/**
 * linkerd-cni on the node, as a stand-in for its binary and its installer (its module is not
 * served here): the binary, named `linkerd-cni`, is the Go linkerd-cni pattern
 * (bench/baselines/linkerd-pattern: the pod and its namespace got from the API, then one
 * `iptables-nft -t nat` per rule) running linkerd-cni's own commands for a default meshed pod
 * (test/kit/linkerd/port.ts); its installer's entry is appended to the active conflist and
 * stripped on its stop, each a temp file renamed over, as install-cni.sh does.
 */
const binary = join(paths.cniBinDir, "linkerd-cni");

/** linkerd-cni's entry, as its installer renders CNI_NETWORK_CONFIG. */
export const linkerdCniEntry = {
  name: "linkerd-cni",
  type: "linkerd-cni",
  log_level: "info",
  kubernetes: { kubeconfig: join(paths.cniConfDir, "ZZZ-linkerd-cni-kubeconfig") },
  linkerd: { ...linkerdDefaults },
};

type Conflist = { plugins: Array<{ type: string }> } & Record<string, unknown>;

function rewrite(edit: (conflist: Conflist) => Conflist): void {
  const conflist = JSON.parse(readFileSync(primaryConflistPath, "utf8")) as Conflist;
  const temp = `${primaryConflistPath}.linkerd-cni.tmp`;
  writeFileSync(temp, `${JSON.stringify(edit(conflist), null, 2)}\n`);
  renameSync(temp, primaryConflistPath);
}

/** linkerd-cni's installer's start: its binary in the bin dir, its entry last in the primary's conflist. */
export async function installLinkerdCni(cluster: RealCluster): Promise<void> {
  const pattern = await buildGoPattern();
  const token = join(paths.dir, "linkerd-cni.token");
  await cluster.kubectl(["apply", "-f", "-"], standInAccess);
  writeFileSync(token, (await cluster.kubectl(["create", "token", "linkerd-cni-stand-in", "-n", "default", "--duration=2h"])).trim());
  const rules = join(paths.dir, "linkerd-cni.rules");
  const commands = linkerdCommands(structuredClone(linkerdDefaults) as unknown as LinkerdNetconf, {});
  writeFileSync(rules, `${commands.map((args) => args.join(" ")).join("\n")}\n`);
  const script = `#!/bin/sh
case "$CNI_COMMAND" in
ADD) exec ${pattern} -server ${apiserverUrl()} -token-file ${token} -ca-file ${paths.pki}/ca.crt -rules ${rules} -backend nft ;;
VERSION) echo '{"cniVersion":"1.0.0","supportedVersions":["0.3.1","0.4.0","1.0.0"]}' ;;
esac
`;
  writeFileSync(`${binary}.tmp`, script);
  chmodSync(`${binary}.tmp`, 0o755);
  renameSync(`${binary}.tmp`, binary);
  rewrite((conflist) => ({
    ...conflist,
    plugins: [...conflist.plugins.filter((plugin) => plugin.type !== "linkerd-cni"), linkerdCniEntry],
  }));
}

/** linkerd-cni's installer's stop (SIGTERM): its entry stripped from the conflist, its binary removed. */
export function uninstallLinkerdCni(): void {
  rewrite((conflist) => ({ ...conflist, plugins: conflist.plugins.filter((plugin) => plugin.type !== "linkerd-cni") }));
  rmSync(binary, { force: true });
}

/** What the stand-in's token may do: get pods and namespaces, as linkerd-cni's ClusterRole grants. */
const standInAccess = JSON.stringify({
  apiVersion: "v1",
  kind: "List",
  items: [
    { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "linkerd-cni-stand-in", namespace: "default" } },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: "linkerd-cni-stand-in" },
      rules: [{ apiGroups: [""], resources: ["pods", "namespaces"], verbs: ["get"] }],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: "linkerd-cni-stand-in" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "linkerd-cni-stand-in" },
      subjects: [{ kind: "ServiceAccount", name: "linkerd-cni-stand-in", namespace: "default" }],
    },
  ],
});
