// A real pod start: containerd's RunPodSandbox through bridge + host-local, with meshcni
// in the chain and without it (meshcni's share of a pod start), interleaved; and the time
// from a primary CNI's rewrite of its config to the first redirected sandbox.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { AgentHarness } from "../test/kit/agent/harness.js";
import { FakeApiServer, podObject } from "../test/kit/api/server.js";
import { agentTemplate } from "../test/kit/common.js";
import { ContainerdNode } from "../test/kit/cri/containerd.js";
import { TestNetwork } from "../test/kit/netns/network.js";
import { natRules } from "../test/kit/netns/plugin-process.js";
import { printTable, type Summary, saveResults, summarize } from "./stats.js";

const warmup = 2;
const runs = 20;
const rewrites = 10;

export async function benchCri(): Promise<Summary[]> {
  const api = await new FakeApiServer().start();
  const net = new TestNetwork(73);
  const host = new AgentHarness({ onHost: true });
  const plain = new ContainerdNode({ confDir: join(net.dir, "plain.d"), binDir: join(net.dir, "plain-bin") });
  const meshed = new ContainerdNode({ confDir: host.netDir, binDir: host.binDir });
  try {
    for (const dir of [plain.cni.confDir, plain.cni.binDir]) mkdirSync(dir, { recursive: true });
    writeFileSync(join(plain.cni.confDir, "10-plain.conflist"), JSON.stringify(net.primaryConflist("plain")));
    writeFileSync(host.path("10-primary.conflist"), JSON.stringify(net.primaryConflist("primary")));
    await host.startWithApi(api, ["--template", agentTemplate(net.stateDir), "--state-dir", net.stateDir]);
    await host.waitFor(async () => (await host.readyz()).status === 200);
    await plain.start();
    await meshed.start();
    const times = { meshed: [] as number[], plain: [] as number[], stop: [] as number[] };
    let pod = 0;
    const start = async (runtime: ContainerdNode) => {
      const name = `pod-${pod++}`;
      api.addPod(podObject("bench", name, { proxy: "container" }));
      const begun = performance.now();
      const sandbox = await runtime.runPod(runtime.sandboxConfig("bench", name));
      return { sandbox, ms: performance.now() - begun };
    };
    for (let round = 0; round < warmup + runs; round++) {
      for (const [kind, runtime] of [
        ["meshed", meshed],
        ["plain", plain],
      ] as const) {
        const { sandbox, ms } = await start(runtime);
        if (kind === "meshed" && !(await natRules(sandbox.podNetns, "nft")).includes(":PROXY_INIT_REDIRECT - [0:0]"))
          throw new Error("a meshed sandbox came up without its redirect");
        const stopping = performance.now();
        await runtime.removePod(sandbox.id);
        if (round < warmup) continue;
        times[kind].push(ms);
        if (kind === "meshed") times.stop.push(performance.now() - stopping);
      }
    }
    const rechains: number[] = [];
    const during = { failed: [] as string[], unredirected: 0 };
    for (let i = 0; i < rewrites; i++) {
      const written = performance.now();
      if (i % 2 === 0) host.writeInPlace("10-primary.conflist", JSON.stringify(net.primaryConflist("primary")));
      else host.renameOver("10-primary.conflist", JSON.stringify(net.primaryConflist("primary")));
      for (;;) {
        const { sandbox } = await start(meshed).catch((error: Error) => {
          during.failed.push(error.message);
          return { sandbox: undefined };
        });
        const redirected = sandbox && (await natRules(sandbox.podNetns, "nft")).includes(":PROXY_INIT_REDIRECT - [0:0]");
        if (sandbox && !redirected) during.unredirected++;
        if (redirected) rechains.push(performance.now() - written);
        if (sandbox) await meshed.removePod(sandbox.id);
        if (redirected) break;
      }
    }
    const rows = [
      summarize(`RunPodSandbox, meshed pod, meshcni chained (x${runs})`, times.meshed),
      summarize(`RunPodSandbox, same chain without meshcni (x${runs})`, times.plain),
      summarize(`Stop + RemovePodSandbox, meshed pod (x${runs})`, times.stop),
      summarize(`rewrite of the config -> redirected sandbox (x${rewrites})`, rechains),
    ];
    printTable("containerd 1.6 CRI (real runc sandboxes, bridge + host-local)", rows);
    const share = rows[0]!.p50 - rows[1]!.p50;
    console.log(`meshcni's share of a pod start (p50): ${share.toFixed(1)} ms of ${rows[0]!.p50.toFixed(1)} ms`);
    console.log(
      `during the ${rewrites} rewrites: ${during.unredirected} sandboxes started unredirected, ${during.failed.length} RunPodSandbox failed`,
    );
    for (const message of new Set(during.failed)) console.log(`  failed: ${message.slice(0, 200)}`);
    console.log(`results: ${saveResults("cri", rows)}`);
    return rows;
  } finally {
    await meshed.stop();
    await plain.stop();
    await host.cleanup();
    await net.cleanup();
    await api.stop();
  }
}
