// The baselines the plugin's section measures meshcni against: linkerd-cni's pattern as a
// Go program, the same rules applied one exec per rule, and the floor of one restore or nft -f.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { V1Pod } from "@kubernetes/client-node";
import { renderApply } from "../src/iptables/restore.js";
import { parseNatTable } from "../src/iptables/save.js";
import { parseNetConf } from "../src/mesh/netconf.js";
import { firewallSpecFor } from "../src/mesh/pod.js";
import { planRules } from "../src/redirect/plan.js";
import { type FakeApiServer, podObject } from "../test/kit/api/server.js";
import { nftRuleset } from "../test/kit/fixtures.js";
import { buildGoPattern, goPattern } from "../test/kit/linkerd/pattern.js";

export { buildGoPattern, goPattern };
export const node = "bench-node";
export const tuning = "/usr/lib/cni/tuning";
export const perRuleScript = join(import.meta.dirname, "baselines/linkerd-per-rule.sh");

/** The default meshed pod's rules, as the per-rule baseline and the floor apply them. */
export const meshedPod = podObject("bench", "meshed", { proxy: "container", nodeName: node });
const plan = planRules(
  firewallSpecFor(
    parseNetConf(JSON.stringify({ cniVersion: "1.0.0", name: "bench", type: "meshcni" })).linkerd,
    meshedPod as V1Pod,
    undefined,
    [],
  ),
  "ipv4",
);
export const restoreText = renderApply(plan, parseNatTable(""));
export const perRuleLines = [
  ...Object.keys(plan.chains).map((chain) => `-N ${chain}`),
  ...Object.entries(plan.chains).flatMap(([chain, rules]) => rules.map((args) => `-A ${chain} ${args.join(" ")}`)),
  ...plan.jumps.map((jump) => `-A ${jump.from} ${jump.args.join(" ")}`),
].join("\n");

/** The same rules for nft, as meshcni's nftables backend writes them (benchPlugin checks that CHECK passes on them). */
export const nftText = nftRuleset(
  "ip",
  [
    'tcp dport { 4191, 4190 } return comment "proxy-init/ignore-port-4191,4190"',
    'meta l4proto tcp redirect to :4143 comment "proxy-init/redirect-all-incoming-to-proxy-port"',
  ],
  [
    'meta skuid 2102 return comment "proxy-init/ignore-proxy-user-id"',
    'oifname "lo" return comment "proxy-init/ignore-loopback"',
    'meta l4proto tcp redirect to :4140 comment "proxy-init/redirect-all-outgoing-to-proxy-port"',
  ],
);

/** The Go pattern's arguments against the bench's API server (its token, CA and rules written beside it), writing with `backend`. */
export function goPatternArgs(api: FakeApiServer, backend: string): string[] {
  const files = { token: join(api.dir, "token"), ca: join(api.dir, "ca.crt"), rules: join(api.dir, "rules") };
  writeFileSync(files.token, api.token);
  writeFileSync(files.ca, api.caPem);
  writeFileSync(files.rules, `${perRuleLines}\n`);
  return [
    "-server",
    `https://127.0.0.1:${api.port}`,
    "-token-file",
    files.token,
    "-ca-file",
    files.ca,
    "-rules",
    files.rules,
    "-backend",
    backend,
  ];
}
