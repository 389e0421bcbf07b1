import type { V1Pod } from "@kubernetes/client-node";
import { execa } from "execa";
import { inNetnsCommand } from "../common.js";
import { type LinkerdNetconf, type LinkerdPod, linkerdCommands } from "./port.js";

/** linkerd-cni's chart's netconf (charts/linkerd2-cni values: ports, proxy UID, the proxy's admin and tap ports ignored inbound). */
export const linkerdChartNetconf: LinkerdNetconf = {
  "incoming-proxy-port": 4143,
  "outgoing-proxy-port": 4140,
  "proxy-uid": 2102,
  "inbound-ports-to-ignore": ["4191", "4190"],
};

/**
 * Writes a pod's redirect the way linkerd-cni does (one `iptables -t nat` process per
 * rule, as its port in linkerd-port.ts computes them) and leaves no meshcni record: a pod
 * of a node migrating from linkerd-cni.
 */
export async function writeLinkerdCniRules(
  netns: string,
  pod: V1Pod | LinkerdPod,
  backend: "nft" | "legacy" = "nft",
  netconf: LinkerdNetconf = linkerdChartNetconf,
): Promise<void> {
  const [command, ...prefix] = inNetnsCommand(netns);
  const asLinkerd: LinkerdPod =
    "metadata" in pod ? { annotations: pod.metadata?.annotations ?? {}, labels: pod.metadata?.labels ?? {} } : (pod as LinkerdPod);
  for (const args of linkerdCommands(netconf, asLinkerd)) await execa(command!, [...prefix, `iptables-${backend}`, "-t", "nat", ...args]);
}
