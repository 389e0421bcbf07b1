import { readdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { fileRecordStore } from "../../src/state/records.js";
import {
  ciliumConflistPath,
  isWrite,
  runCiliumWriter,
  setAside,
  startCiliumWatcher,
  stopCiliumWatcher,
  undoTakeover,
  watcherLines,
} from "../kit/cluster/cilium.js";
import { type PodObject, RealCluster } from "../kit/cluster/cluster.js";
import { agentStateDir, paths } from "../kit/cluster/layout.js";
import { currentLeg, loadsDropIns } from "../kit/cluster/leg.js";
import { Meshcni } from "../kit/cluster/meshcni.js";
import { chainedPlugins, chainedTypes, conflistPlugins, primaryConflistPath } from "../kit/cluster/node.js";
import { asList, expectRunningPodsRedirected, meshedDeployment, plainPod, redirectedBy } from "../kit/cluster/workloads.js";
import { sleep, until } from "../kit/common.js";
import { describeAsRoot } from "../kit/root-suites.js";

const primaryName = basename(primaryConflistPath);
/** Where the runtime loads drop-ins, meshcni follows Cilium into its network's drop-in dir and never writes its file. */
const dropIns = loadsDropIns(currentLeg());
/** The plugin types of 05-cilium.conflist's chain as the runtime loads it, its drop-ins included (none while it is absent or mid-write). */
const ciliumChainedTypes = () => {
  try {
    return chainedPlugins(ciliumConflistPath).map((plugin) => plugin.type);
  } catch {
    return [];
  }
};

/**
 * seed 002 with Cilium's own code: its agent's CNI config writer (the `cni-config` cell,
 * build/cluster/cilium) takes the node over from the cluster's primary, as cilium-agent
 * does at its start, with a custom config (cni.customConf) of the cluster's bridge, since
 * cilium-cni itself needs a running Cilium agent.
 */
const leg = currentLeg();
// Cilium's custom config is the bridge primary's with the upper half of its IPv4 pod range (ciliumCustomConflist):
// legs of the bridge primary on IPv4 only.
const suite =
  leg.families === "ipv4" && leg.primary === "bridge"
    ? describeAsRoot
    : (name: string, body: () => void) =>
        describe.skip(`${name} (leg ${leg.name}: its custom config is the bridge primary's, on an IPv4 range)`, body);

suite("Cilium's CNI config writer taking a real node over", () => {
  const cluster = new RealCluster();
  const meshcni = new Meshcni(cluster);
  /** The agent's log lines saying it chained meshcni into 05-cilium.conflist (or by a drop-in into its network, cilium), from `since` (ISO time) on. */
  const chainedIntoCilium = async (since: string) =>
    (await meshcni.log()).filter(
      (line) =>
        String(line.time) >= since &&
        (dropIns
          ? line.msg === "chained meshcni by its drop-in" && String(line.file).endsWith("/cilium/zz-meshcni.conf")
          : /^(re-)?chained meshcni$/.test(String(line.msg)) && String(line.file).endsWith(`/${basename(ciliumConflistPath)}`)),
    );
  /** The meshed pods of `app`, each started through 05-cilium.conflist: host-local gave it the upper half's address. */
  const startedThroughCilium = async (app: string) => {
    const pods = (await cluster.get<{ items: PodObject[] }>("pods", "-l", `app=${app}`)).items;
    return pods.map((pod) => Number(pod.status.podIP!.split(".")[3]) >= 128);
  };
  const meshedPods = async (app: string, replicas: number) => {
    await cluster.kubectl(["apply", "-f", "-"], asList(meshedDeployment(app, { sidecar: "native", replicas })));
    await cluster.kubectl(["rollout", "status", `deployment/${app}`, "--timeout=120s"]);
  };

  beforeAll(async () => {
    await cluster.up();
    await meshcni.deploy();
    await cluster.kubectl(["apply", "-f", "-"], asList(plainPod("client")));
    await cluster.kubectl(["wait", "--for=condition=Ready", "pod/client", "--timeout=90s"]);
  }, 300_000);

  afterEach(async () => {
    await stopCiliumWatcher();
    undoTakeover();
    await until(() => chainedTypes().at(-1) === "meshcni", 20_000, 100);
    // meshcni's drop-in back in the primary's network's dir, Cilium's network's dir removed with its drop-in.
    const network = (JSON.parse(readFileSync(primaryConflistPath, "utf8")) as { name: string }).name;
    const expected = [primaryName, "ZZZ-meshcni-kubeconfig", ...(dropIns ? [network] : [])].sort();
    await until(() => readdirSync(paths.cniConfDir).sort().join() === expected.join(), 10_000, 100).catch(() => undefined);
    expect(readdirSync(paths.cniConfDir).sort()).toEqual(expected);
    await cluster.kubectl(["delete", "deployments", "--all", "--wait"]);
  }, 120_000);

  afterAll(async () => {
    await cluster.down();
  }, 120_000);

  it("a. takeover, exclusive, run once: the primary set aside, meshcni chained into 05-cilium.conflist; pods after it redirected, pods before it deleted cleanly", async () => {
    await meshedPods("before", 2);
    const beforeUids = (await cluster.get<{ items: PodObject[] }>("pods", "-l", "app=before")).items.map((pod) => pod.metadata.uid);
    const records = () => fileRecordStore(agentStateDir).list();
    const sandboxes = records()
      .filter((record) => beforeUids.includes(record.pod.uid))
      .map((record) => record.containerId);
    expect(sandboxes).toHaveLength(2);

    const since = new Date().toISOString();
    const writer = await runCiliumWriter(cluster.bin, true);
    expect(setAside()).toEqual([`${primaryName}.cilium_bak`]);
    await until(async () => (await chainedIntoCilium(since)).length > 0, 20_000, 100);
    const [chained] = await chainedIntoCilium(since);
    const chainedAt = Date.parse(String(chained!.time));
    const wroteAt = writer.lines.find(isWrite)!.time;
    console.log(
      `Cilium's writer wrote 05-cilium.conflist; meshcni chained into it ${chainedAt - wroteAt} ms after the write, ` +
        `${chainedAt - writer.exitedAt} ms after the writer's exit (the agent's own latency: ${chained!.latencyMs} ms)`,
    );
    expect(chainedAt - wroteAt).toBeLessThan(2000);
    expect(ciliumChainedTypes()).toEqual(["bridge", "meshcni"]);
    // Cilium's own file as its writer left it, where meshcni chains by drop-in.
    if (dropIns) expect(conflistPlugins(ciliumConflistPath).map((plugin) => plugin.type)).toEqual(["bridge"]);

    await meshedPods("after", 2);
    expect(await startedThroughCilium("after")).toEqual([true, true]);
    expect(await expectRunningPodsRedirected(cluster, "after")).toBe(2);
    expect(await expectRunningPodsRedirected(cluster, "before")).toBe(2);

    // The pods of the old chain go through the new one's DEL (containerd runs the active config's), and must not fail it.
    await cluster.kubectl(["delete", "deployment", "before", "--wait"]);
    const containerdLog = () => readFileSync(join(paths.logs, "containerd.log"), "utf8");
    await until(
      () => sandboxes.every((id) => containerdLog().includes(`TearDown network for sandbox \\"${id}\\" successfully`)),
      60_000,
      250,
    );
    expect(sandboxes.filter((id) => containerdLog().includes(`failed to destroy network for sandbox \\"${id}\\"`))).toEqual([]);
    await until(() => records().every((record) => !beforeUids.includes(record.pod.uid)), 10_000, 100);
    const stateFiles = readdirSync(agentStateDir, { recursive: true, encoding: "utf8" });
    expect(stateFiles.filter((file) => sandboxes.some((id) => file.includes(id)))).toEqual([]);
    expect(await expectRunningPodsRedirected(cluster, "after")).toBe(2);
  }, 240_000);

  it("b. kept running with its watch, cni-exclusive=false (Linkerd's advice): meshcni stays chained, nothing rewrites in a loop", async () => {
    const since = new Date().toISOString();
    startCiliumWatcher(cluster.bin, false);
    await until(async () => (await chainedIntoCilium(since)).length > 0, 20_000, 100);
    // Not exclusive: the primary stays where it was, and meshcni leaves it for the config the runtime now reads.
    expect(setAside()).toEqual([]);
    expect(chainedTypes()).toEqual(["bridge", "portmap"]);
    const samples: string[][] = [];
    const window = (async () => {
      for (const end = Date.now() + 20_000; Date.now() < end; await sleep(100)) samples.push(ciliumChainedTypes());
    })();
    await meshedPods("watched", 2);
    await window;
    const writes = watcherLines().filter(isWrite).length;
    const chains = (await chainedIntoCilium(since)).length;
    console.log(`cni-exclusive=false, 20 s window: Cilium wrote ${writes} time(s), meshcni chained ${chains} time(s)`);
    expect({ writes, chains }).toEqual({ writes: 1, chains: 1 });
    expect((await meshcni.log()).filter((line) => String(line.time) >= since && line.level === "warn")).toEqual([]);
    expect(samples.filter((types) => types.join() !== "bridge,meshcni")).toEqual([]);
    expect(await startedThroughCilium("watched")).toEqual([true, true]);
    expect(await expectRunningPodsRedirected(cluster, "watched")).toBe(2);
  }, 180_000);

  it.runIf(dropIns)(
    "c. kept running with its watch, cni-exclusive=true (Helm's default), meshcni by drop-in: no fight (Cilium writes once, meshcni once, no warning); meshed pods started meanwhile redirected by their ADD",
    async () => {
      const since = new Date().toISOString();
      startCiliumWatcher(cluster.bin, true);
      await until(async () => (await chainedIntoCilium(since)).length > 0, 20_000, 100);
      expect(setAside()).toEqual([`${primaryName}.cilium_bak`]);
      const samples: string[][] = [];
      const window = (async () => {
        for (const end = Date.now() + 20_000; Date.now() < end; await sleep(100)) samples.push(ciliumChainedTypes());
      })();
      await meshedPods("unfought", 3);
      await window;
      const writes = watcherLines().filter(isWrite).length;
      const chains = (await chainedIntoCilium(since)).length;
      const warned = (await meshcni.log()).filter((line) => String(line.time) >= since && line.level === "warn");
      const how = await redirectedBy(cluster, "unfought");
      console.log(
        `cni-exclusive=true, meshcni by drop-in, 20 s window: Cilium wrote ${writes} time(s), meshcni chained ${chains} time(s), ` +
          `warned ${warned.length} time(s); 3 meshed pods redirected by ${how.join(", ")}`,
      );
      expect({ writes, chains, warned }).toEqual({ writes: 1, chains: 1, warned: [] });
      expect(samples.filter((types) => types.join() !== "bridge,meshcni")).toEqual([]);
      expect(how).toEqual(["ADD", "ADD", "ADD"]);
      expect(await startedThroughCilium("unfought")).toEqual([true, true, true]);
      expect(await expectRunningPodsRedirected(cluster, "unfought")).toBe(3);
    },
    180_000,
  );

  it.skipIf(dropIns)(
    "c. kept running with its watch, cni-exclusive=true (Helm's default): meshcni fights, backs off and says so; every meshed pod started meanwhile ends redirected",
    async () => {
      const since = new Date().toISOString();
      startCiliumWatcher(cluster.bin, true);
      const fightWarnings = async () =>
        (await meshcni.log()).filter(
          (line) => String(line.time) >= since && String(line.msg).startsWith("another agent keeps removing meshcni's entry"),
        );
      // Started as the agent backs off for its longest: 8 s in which it leaves the config Cilium keeps without meshcni.
      await until(async () => (await fightWarnings()).some((line) => String(line.msg).includes("backing off 8 s")), 90_000, 100);
      await meshedPods("fought", 3);
      // One started through Cilium's chain without meshcni is found by the sweep, which holds it to the agent's own entry
      // (the active config has none), and redirected.
      const redirected = async () => {
        try {
          return (await expectRunningPodsRedirected(cluster, "fought")) === 3;
        } catch {
          return false;
        }
      };
      const startedAt = Date.now();
      await until(redirected, 30_000, 250);
      const warned = await fightWarnings();
      // Each pod's record says how it got its redirect: the runtime's ADD through meshcni (its sandbox's id), or the sweep.
      const how = await redirectedBy(cluster, "fought");
      console.log(
        `cni-exclusive=true: Cilium wrote ${watcherLines().filter(isWrite).length} time(s), meshcni chained ${(await chainedIntoCilium(since)).length} ` +
          `time(s), warned of the fight ${warned.length} time(s); 3 meshed pods started in its longest back-off ` +
          `redirected by ${how.join(", ")}, all of them ${Date.now() - startedAt} ms after their rollout`,
      );
      // Whether any pod started without meshcni depends on what containerd had loaded during the back-off: in the runs
      // here it still ran the chain with meshcni (its reload of Cilium's rewrite had not taken), so each record is the
      // runtime's ADD. A pod that does start without meshcni is found by the sweep by the agent's own entry
      // (test/netns/sweep-entry.test.ts); here the invariant: every pod redirected, and the fight said.
      expect(warned.length).toBeGreaterThan(0);
      expect(how).toHaveLength(3);
    },
    180_000,
  );
});
