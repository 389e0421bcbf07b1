import { readFileSync } from "node:fs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { RealCluster } from "../kit/cluster/cluster.js";
import { currentLeg, sendsCniStatus } from "../kit/cluster/leg.js";
import { Meshcni, withPluginLog } from "../kit/cluster/meshcni.js";
import { asList, meshedDeployment } from "../kit/cluster/workloads.js";
import { sleep, until } from "../kit/common.js";
import { describeAsRoot } from "../kit/root-suites.js";

const pluginLog = "/var/run/meshcni/plugin.log";

/** Each plugin invocation's verb and what it said, from the plugin's own log file. */
const invocations = () =>
  readFileSync(pluginLog, "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as { command: string; msg: string });

/** Calico's plugin speaks at most 1.0.0 and its installer writes 0.3.1; libcni sends STATUS only to a 1.1.0 chain, and only containerd 2's. */
const leg = currentLeg();
const calico = leg.primary === "calico";
// containerd 1.7's libcni takes no 1.1.0 chain (its pods never start): 1.0.0 there.
const statusSent = !calico && sendsCniStatus(leg);
const chainVersion = calico ? "0.3.1" : statusSent ? "1.1.0" : "1.0.0";

/**
 * What containerd 2 really calls when the primary's conflist says cniVersion 1.1.0 (the
 * only version where libcni sends STATUS and GC), or, with Calico, its 0.3.1: recorded by
 * the plugin itself.
 */
describeAsRoot(`the CNI verbs containerd ${leg.containerd} calls with a cniVersion ${chainVersion} chain`, () => {
  const cluster = new RealCluster({ cniVersion: chainVersion });
  const meshcni = new Meshcni(cluster);

  beforeAll(async () => {
    await cluster.up();
    await meshcni.deploy([], (manifests) => withPluginLog(manifests, pluginLog));
  }, 300_000);

  afterAll(async () => {
    await cluster.down();
  }, 120_000);

  const title = !statusSent
    ? "calls ADD and DEL per pod, and no STATUS (kubelet asks every 5 s), CHECK or GC over a pod's life"
    : "calls STATUS every few seconds (the node's network readiness), ADD and DEL per pod, and no CHECK or GC over a pod's life";
  it(title, async () => {
    await cluster.kubectl(["apply", "-f", "-"], asList(meshedDeployment("shop", { sidecar: "native" })));
    await cluster.kubectl(["rollout", "status", "deployment/shop", "--timeout=90s"]);
    await cluster.kubectl(["delete", "deployment", "shop", "--wait"]);
    await until(() => invocations().some((line) => line.command === "DEL"), 30_000, 250);
    const statuses = () => invocations().filter((line) => line.command === "STATUS" && line.msg === "done").length;
    const statusesBefore = statuses();
    // kubelet asks the runtime's status every 5 s; containerd 2 answers it with a CNI STATUS of a 1.1.0 chain.
    if (!statusSent) await sleep(12_000);
    else await until(() => statuses() >= statusesBefore + 2, 20_000, 500);
    const verbs = new Set(invocations().map((line) => line.command));
    expect([...verbs].sort()).toEqual(statusSent ? ["ADD", "DEL", "STATUS"] : ["ADD", "DEL"]);
    if (!statusSent) return;
    const said = invocations()
      .filter((line) => line.command === "STATUS" && line.msg !== "done")
      .map((line) => line.msg);
    // The agent chains meshcni before its kubeconfig is minted (fail closed): a STATUS in between truly cannot serve ADD.
    // Once it can, it stays so.
    const served = said.indexOf("ADD can be served");
    expect(served, said.join(", ")).toBeGreaterThanOrEqual(0);
    expect(said.slice(served)).not.toContain("ADD cannot be served");
  }, 120_000);
});
