// meshcni's netconf on the test cluster as an operator changes it: its ConfigMap's
// iptables-mode switched, and where the node's ADD records say each pod's redirect is.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { RealCluster } from "./cluster.js";
import { agentStateDir } from "./layout.js";

/** The backend each of the node's ADD records names (the agent's state dir on the host). */
export function recordedBackends(): string[] {
  const dir = join(agentStateDir, "attachments");
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((file) => file.endsWith(".json"))
    .flatMap((file) => {
      try {
        return [(JSON.parse(readFileSync(join(dir, file), "utf8")) as { backend: string }).backend];
      } catch {
        return []; // removed meanwhile
      }
    });
}

/** Whether every record is where `mode` puts it: nftables, or an iptables backend for any other mode. */
export const recordsIn = (mode: string) => recordedBackends().every((backend) => (mode === "nftables") === (backend === "nftables"));

/** meshcni's ConfigMap's netconf text now. */
export async function configMapNetconf(cluster: RealCluster): Promise<string> {
  const { data } = await cluster.get<{ data: { cni_network_config: string } }>("-n", "meshcni", "configmap", "meshcni-config");
  return data.cni_network_config;
}

/** Switches the ConfigMap's iptables-mode (nftables to auto, anything else to nftables): the text before and after. */
export async function switchIptablesMode(cluster: RealCluster): Promise<{ from: string; to: string; before: string }> {
  const before = await configMapNetconf(cluster);
  const entry = JSON.parse(before) as { linkerd: Record<string, unknown> };
  const from = String(entry.linkerd["iptables-mode"]);
  const to = from === "nftables" ? "auto" : "nftables";
  entry.linkerd["iptables-mode"] = to;
  const patch = JSON.stringify({ data: { cni_network_config: JSON.stringify(entry, null, 2) } });
  await cluster.kubectl(["-n", "meshcni", "patch", "configmap", "meshcni-config", "--type=merge", "-p", patch]);
  return { from, to, before };
}
