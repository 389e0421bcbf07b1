// The faults an operator brings to meshcni itself: a rollout to another build, its
// iptables-mode changed, its agent stopped past the plugin token's life, an override
// annotation flipped on a namespace or a pod (the rest of the soak's faults: faults.ts).
import { imageRepository } from "../../../src/build-info.js";
import { otherBuild, otherBuildArchive } from "../cluster/images.js";
import { agentCommit, sandboxFailures, stopAgentKeepingDaemonSet } from "../cluster/meshcni.js";
import { recordedBackends, recordsIn, switchIptablesMode } from "../cluster/netconf.js";
import { pluginTokenClaims } from "../cluster/tokens.js";
import { sleep, until } from "../common.js";
import { between, type FaultKind } from "./draw.js";
import type { FaultContext } from "./faults.js";
import { soakLabel, soakNamespaces } from "./workload.js";

type MeshcniFault = Extract<FaultKind, "daemonset-rolled" | "annotation-flipped" | "plugin-token-expired" | "backend-switched">;

export const meshcniFaults: Record<MeshcniFault, (context: FaultContext) => Promise<string>> = {
  "daemonset-rolled": async ({ cluster }) => {
    const image = (
      await cluster.kubectl(["-n", "meshcni", "get", "daemonset", "meshcni", "-o", "jsonpath={.spec.template.spec.containers[0].image}"])
    ).trim();
    await cluster.ctr("images", "import", "--all-platforms", await otherBuildArchive());
    const other = `${imageRepository}:${otherBuild.tag}`;
    const commits: Array<string | undefined> = [];
    for (const to of [other, image]) {
      await cluster.kubectl(["-n", "meshcni", "set", "image", "daemonset/meshcni", `install=${to}`]);
      await cluster.kubectl(["-n", "meshcni", "rollout", "status", "daemonset/meshcni", "--timeout=120s"]);
      commits.push(await agentCommit());
    }
    if (commits[0] !== otherBuild.commit) throw new Error(`rolled out to ${other}, the agent runs commit ${commits[0]}`);
    return `meshcni's DaemonSet rolled out to another build (${other}, commit ${commits[0]}) and back (commit ${commits[1]})`;
  },
  "annotation-flipped": async ({ cluster, random }) => {
    const forMs = between(random, 5000, 20_000);
    // A port no check connects to: running pods keep the plan they started with, new ones take the changed one,
    // and no answer on 8080 changes (the checks' expectations hold whichever plan a pod runs).
    const [key, on] = [
      ["config.linkerd.io/skip-inbound-ports", "config.linkerd.io/skip-outbound-ports"][between(random, 0, 1)]!,
      soakNamespaces[between(random, 0, soakNamespaces.length - 1)]!,
    ];
    const pods = (await cluster.kubectl(["-n", on, "get", "pods", "-l", `${soakLabel}!=unmeshed`, "-o", "name"]))
      .split("\n")
      .filter(Boolean);
    let target = random() < 0.5 || pods.length === 0 ? ["namespace", on] : ["-n", on, pods[between(random, 0, pods.length - 1)]!];
    await cluster.kubectl(["annotate", ...target, `${key}=9999`, "--overwrite"]).catch(async () => {
      target = ["namespace", on]; // the pod went meanwhile
      await cluster.kubectl(["annotate", ...target, `${key}=9999`, "--overwrite"]);
    });
    await sleep(forMs);
    // The pod may be gone by now (the load deletes pods all along): nothing to take back then.
    await cluster.kubectl(["annotate", ...target, `${key}-`]).catch(() => undefined);
    return `${key}=9999 on ${target.join(" ")} for ${forMs} ms, then removed`;
  },
  "plugin-token-expired": async ({ cluster }) => {
    const expired = async () => (await sandboxFailures(cluster)).split("token expired").length - 1;
    const before = await expired();
    await stopAgentKeepingDaemonSet(cluster);
    const expiresAt = (pluginTokenClaims().exp ?? 0) * 1000;
    // Past its exp and the minute of leeway the API server gives a token's times; the load goes on creating pods.
    await sleep(Math.max(0, expiresAt - Date.now()) + 65_000);
    await until(async () => (await expired()) > before, 120_000, 1000).catch(() => {
      throw new Error("no pod failed closed naming the plugin token's expiry");
    });
    await cluster.kubectl(["-n", "meshcni", "rollout", "undo", "daemonset/meshcni"]);
    return `the agent stopped (its DaemonSet rolled to an absent image) past the plugin token's expiry (${new Date(expiresAt).toISOString()}): pods started then failed closed naming it; rolled back`;
  },
  "backend-switched": async ({ cluster }) => {
    const { from, to } = await switchIptablesMode(cluster);
    // As an operator changes it: the entry is the agent's environment, taken at its start.
    await cluster.kubectl(["-n", "meshcni", "rollout", "restart", "daemonset/meshcni"]);
    await cluster.kubectl(["-n", "meshcni", "rollout", "status", "daemonset/meshcni", "--timeout=120s"]);
    const rolled = performance.now();
    await until(() => recordsIn(to), 180_000, 500).catch(() => {
      throw new Error(`running pods' redirects not moved to ${to} within 180 s: ${recordedBackends().join(", ")}`);
    });
    const seconds = ((performance.now() - rolled) / 1000).toFixed(1);
    return `meshcni's iptables-mode changed from ${from} to ${to} and its DaemonSet restarted: ${recordedBackends().length} records in the new backend ${seconds} s after the rollout`;
  },
};
