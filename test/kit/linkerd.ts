import type { V1Pod } from "@kubernetes/client-node";
import { execa } from "execa";
import { plansFor } from "../../src/audit/expectation.js";
import { parseNetConf } from "../../src/mesh/netconf.js";
import { inNetnsCommand } from "./common.js";

/**
 * Writes a pod's redirect the way linkerd-cni does (one `iptables -t nat` process per
 * rule, chains first, then the jumps; its chart's settings) and leaves no meshcni
 * record: a pod of a node migrating from linkerd-cni.
 */
export async function writeLinkerdCniRules(netns: string, pod: V1Pod, backend: "nft" | "legacy" = "nft"): Promise<void> {
  const chart = parseNetConf(
    JSON.stringify({ cniVersion: "1.0.0", name: "linkerd-cni", type: "linkerd-cni", linkerd: { "iptables-mode": backend } }),
  );
  const [command, ...prefix] = inNetnsCommand(netns);
  const iptables = (args: string[]) => execa(command!, [...prefix, `iptables-${backend}`, "-t", "nat", ...args]);
  for (const plan of plansFor(chart, pod, undefined, 443)) {
    for (const chain of Object.keys(plan.chains)) await iptables(["-N", chain]);
    for (const [chain, rules] of Object.entries(plan.chains)) for (const rule of rules) await iptables(["-A", chain, ...rule]);
    for (const jump of plan.jumps) await iptables(["-A", jump.from, ...jump.args]);
  }
}
