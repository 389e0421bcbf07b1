import { readFileSync } from "node:fs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { RealCluster } from "../kit/cluster/cluster.js";
import { Meshcni, withPluginLog } from "../kit/cluster/meshcni.js";
import { asList, meshedDeployment } from "../kit/cluster/workloads.js";
import { until } from "../kit/common.js";
import { describeAsRoot } from "../kit/root-suites.js";

const pluginLog = "/var/run/meshcni/plugin.log";

/** Each plugin invocation's verb and what it said, from the plugin's own log file. */
const invocations = () =>
  readFileSync(pluginLog, "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as { command: string; msg: string });

/**
 * What containerd 2 really calls when the primary's conflist says cniVersion 1.1.0 (the
 * only version where libcni sends STATUS and GC), recorded by the plugin itself.
 */
describeAsRoot("the CNI verbs containerd 2 calls with a cniVersion 1.1.0 chain", () => {
  const cluster = new RealCluster({ cniVersion: "1.1.0" });
  const meshcni = new Meshcni(cluster);

  beforeAll(async () => {
    await cluster.up();
    await meshcni.deploy([], (manifests) => withPluginLog(manifests, pluginLog));
  }, 300_000);

  afterAll(async () => {
    await cluster.down();
  }, 120_000);

  it("calls STATUS every few seconds (the node's network readiness), ADD and DEL per pod, and no CHECK or GC over a pod's life", async () => {
    await cluster.kubectl(["apply", "-f", "-"], asList(meshedDeployment("shop", { sidecar: "native" })));
    await cluster.kubectl(["rollout", "status", "deployment/shop", "--timeout=90s"]);
    await cluster.kubectl(["delete", "deployment", "shop", "--wait"]);
    await until(() => invocations().some((line) => line.command === "DEL"), 30_000, 250);
    const statusesBefore = invocations().filter((line) => line.command === "STATUS" && line.msg === "done").length;
    // kubelet asks the runtime's status every 5 s; containerd 2 answers it with a CNI STATUS of the chain.
    await until(
      () => invocations().filter((line) => line.command === "STATUS" && line.msg === "done").length >= statusesBefore + 2,
      20_000,
      500,
    );
    const verbs = new Set(invocations().map((line) => line.command));
    expect([...verbs].sort()).toEqual(["ADD", "DEL", "STATUS"]);
    expect(
      invocations()
        .filter((line) => line.command === "STATUS" && line.msg !== "done")
        .map((line) => line.msg),
    ).toEqual(expect.arrayContaining(["ADD can be served"]));
    expect(invocations().some((line) => line.command === "STATUS" && line.msg === "ADD cannot be served")).toBe(false);
  }, 120_000);
});
