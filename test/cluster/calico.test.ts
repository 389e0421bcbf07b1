import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RealCluster } from "../kit/cluster/cluster.js";
import { currentLeg, loadsDropIns } from "../kit/cluster/leg.js";
import { Meshcni } from "../kit/cluster/meshcni.js";
import {
  chainedTypes,
  conflistPlugins,
  loadedTypes,
  primaryConflistPath,
  primaryTypes,
  rewritePrimaryConflist,
} from "../kit/cluster/node.js";
import { asList, expectRunningPodsRedirected, meshedDeployment, plainPod, redirectedBy } from "../kit/cluster/workloads.js";
import { sleep, until } from "../kit/common.js";
import { describeAsRoot } from "../kit/root-suites.js";

/** Only the calico leg has Calico's installer on its node; every other leg's primary is the kit's bridge. */
const calicoLeg = currentLeg().primary === "calico";
const title = calicoLeg
  ? "seed 000 with Calico's own installer"
  : "seed 000 with Calico's own installer (skipped: this leg's primary is not Calico; npm run test:matrix calico runs it)";

/**
 * Seed 000 as it happens with Calico: calico-node restarts and its install-cni (Calico's
 * own installer, the real code) writes 10-calico.conflist again, in place, from its
 * template, dropping meshcni's entry, while meshed pods start. The agent must chain
 * meshcni again, and every pod that started must run with its redirect. Where the runtime
 * loads drop-ins, there is nothing to chain again: meshcni's entry is its own file.
 */
(calicoLeg ? describeAsRoot : describe.skip)(title, () => {
  const cluster = new RealCluster();
  const meshcni = new Meshcni(cluster);

  beforeAll(async () => {
    await cluster.up();
    await meshcni.deploy();
    await cluster.kubectl(["apply", "-f", "-"], asList(plainPod("client")));
    await cluster.podIp("client");
  }, 300_000);

  afterAll(async () => {
    await cluster.down();
  }, 120_000);

  it.runIf(loadsDropIns(currentLeg()))(
    "Calico's installer run three times while 8 meshed pods start, meshcni by drop-in: it writes nothing, stays in the runtime's chain, every pod redirected by its ADD",
    async () => {
      const chains = async () => (await meshcni.log()).filter((line) => /^(re-)?chained meshcni/.test(String(line.msg))).length;
      const before = await chains();
      await cluster.kubectl(["apply", "-f", "-"], asList(meshedDeployment("restart", { sidecar: "native", replicas: 8 })));
      for (let round = 0; round < 3; round++) {
        await rewritePrimaryConflist();
        const written = readFileSync(primaryConflistPath, "utf8");
        expect(conflistPlugins().map((plugin) => plugin.type)).toEqual(primaryTypes);
        expect(await loadedTypes()).toEqual([...primaryTypes, "meshcni"]);
        await sleep(1000);
        expect(readFileSync(primaryConflistPath, "utf8")).toBe(written);
      }
      await cluster.kubectl(["rollout", "status", "deployment/restart", "--timeout=120s"]);
      expect(await expectRunningPodsRedirected(cluster, "restart")).toBe(8);
      const how = await redirectedBy(cluster, "restart");
      console.log(
        `Calico's installer ran 3 times; meshcni chained ${(await chains()) - before} time(s); 8 pods redirected by ${how.join(", ")}`,
      );
      expect(how).toEqual(Array(8).fill("ADD"));
      expect(await chains()).toBe(before);
    },
    240_000,
  );

  it.skipIf(loadsDropIns(currentLeg()))(
    "Calico's installer run three times while 8 meshed pods start: meshcni chained again each time, every pod redirected",
    async () => {
      const chains = async () =>
        (await meshcni.log())
          .filter((line) => /^(re-)?chained meshcni$/.test(String(line.msg)))
          .map((line) => Date.parse(String(line.time)));
      await cluster.kubectl(["apply", "-f", "-"], asList(meshedDeployment("restart", { sidecar: "native", replicas: 8 })));
      const measured: number[] = [];
      for (let round = 0; round < 3; round++) {
        const seen = (await chains()).length;
        const exited = await rewritePrimaryConflist();
        await until(async () => (await chains()).length > seen && chainedTypes().at(-1) === "meshcni", 20_000, 100);
        // The agent may chain again before the installer's process has exited: then the time is negative.
        measured.push((await chains())[seen]! - exited);
        expect(chainedTypes()).toEqual([...primaryTypes, "meshcni"]);
        await sleep(1000);
      }
      console.log(`meshcni re-chained after Calico's installer exited: ${measured.map((ms) => `${ms} ms`).join(", ")}`);
      expect(measured.every((ms) => ms < 5000)).toBe(true);
      await cluster.kubectl(["rollout", "status", "deployment/restart", "--timeout=120s"]);
      // A pod whose ADD ran while the conflist lacked meshcni is repaired in place by the agent's sweep.
      await until(
        () =>
          expectRunningPodsRedirected(cluster, "restart").then(
            () => true,
            () => false,
          ),
        60_000,
        1000,
      );
      expect(await expectRunningPodsRedirected(cluster, "restart")).toBe(8);
    },
    240_000,
  );
});
