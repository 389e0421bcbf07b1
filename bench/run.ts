// `npm run bench`: prints each section's figures and writes them to bench/results/.
import { isRoot } from "../test/kit/common.js";
import { benchAgentApi } from "./agent-api.js";
import { benchAgentIdle } from "./agent-idle.js";
import { benchAgentMemory } from "./agent-memory.js";
import { benchAnnotation } from "./annotation.js";
import { benchAudit } from "./audit.js";
import { benchCluster } from "./cluster.js";
import { benchCri } from "./cri.js";
import { benchFreshness } from "./freshness.js";
import { benchInstaller } from "./installer.js";
import { benchPlugin } from "./plugin.js";
import { benchScale } from "./scale.js";
import { benchSocketAttack } from "./socket-attack.js";
import { benchWatchMemory } from "./watch-memory.js";

if (!isRoot) {
  console.error("the benchmark creates network namespaces and iptables rules: run it as root");
  process.exit(1);
}
const only = process.argv[2];
if (!only || only === "plugin") await benchPlugin();
if (!only || only === "installer") await benchInstaller();
if (!only || only === "agent-memory") await benchAgentMemory();
if (!only || only === "agent-api") await benchAgentApi();
if (!only || only === "agent-idle") await benchAgentIdle();
if (!only || only === "socket-attack") await benchSocketAttack();
if (!only || only === "freshness") await benchFreshness();
if (!only || only === "audit") await benchAudit();
if (!only || only === "annotation") await benchAnnotation();
if (!only || only === "cri") await benchCri();
if (!only || only === "cluster") await benchCluster();
// Simulated nodes by the hundred and kube-proxy beside meshcni (about 30 minutes): only when asked for.
if (only === "scale") await benchScale();
// The API server restarted for each case of each round (about 25 minutes): only when asked for.
if (only === "watch-memory") await benchWatchMemory();
