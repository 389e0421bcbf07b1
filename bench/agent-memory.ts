// The agent's footprint: its peak resident set on a first start (it copies its own
// 117 MB binary into the CNI bin dir), and running with a node of pods and a sweep every
// second; and the peak of one sweep's child process, which shares the container's limit.
import { readFileSync, writeFileSync } from "node:fs";
import type { SweepInput } from "../src/audit/contract.js";
import { AgentHarness } from "../test/kit/agent/harness.js";
import { conflist } from "../test/kit/agent/host.js";
import { FakeApiServer, podObject } from "../test/kit/api/server.js";
import { sleep } from "../test/kit/common.js";
import { meshcniBinary } from "../test/kit/paths.js";
import { cleanupMeasure, measure } from "./measure.js";

const pods = 100;
const targetMb = 80;

export interface AgentMemory {
  firstStartMb: number;
  withPodsMb: number;
  sweepChildMb: number;
  targets: Array<{ target: string; value: string; met: boolean }>;
}

export async function benchAgentMemory(): Promise<AgentMemory> {
  const api = await new FakeApiServer().start();
  const host = new AgentHarness();
  try {
    writeFileSync(host.path("10-calico.conflist"), conflist("k8s-pod-network", [{ type: "calico" }]));
    await host.start();
    await host.waitFor(async () => (await host.readyz()).status === 200, 10_000);
    const firstStartMb = host.peakRssMb();
    await host.stop("SIGKILL");
    for (let i = 0; i < pods; i++)
      api.addPod(podObject("bench", `pod-${i}`, { proxy: "container", nodeName: "bench-node", podIP: `10.254.${i >> 8}.${i & 255}` }));
    await host.startWithApi(api, ["--node", "bench-node", "--audit-seconds", "1"]);
    await host.waitFor(async () => (await host.metric('meshcni_meshed_pods{status="unknown"}')) === pods, 20_000);
    await sleep(3000); // a few more sweeps
    const withPodsMb = host.peakRssMb();
    // The agent's child as it runs it: a request and the agent's kubeconfig on stdin.
    const input: SweepInput = {
      kubeconfig: readFileSync(api.writeKubeconfig(), "utf8"),
      request: {
        node: "bench-node",
        pods: [],
        policy: "none",
        limits: { excludeNamespaces: [], skipUids: [], evictionsLeft: 0 },
        dirs: {
          hostRoot: host.hostRoot,
          stateDir: "/var/run/meshcni",
          netDir: "/etc/cni/net.d",
          netnsDirs: ["/var/run/netns"],
          criSocket: "auto",
        },
      },
    };
    const sweep = await measure(meshcniBinary, ["sweep"], { env: { PATH: process.env.PATH ?? "" }, input: JSON.stringify(input) });
    if (sweep.exitCode !== 0 && sweep.exitCode !== 1) throw new Error(`the measured sweep failed (exit ${sweep.exitCode})`);
    const sweepChildMb = sweep.rssKb / 1024;
    const round = (mb: number) => Math.round(mb * 10) / 10;
    const result = {
      firstStartMb: round(firstStartMb),
      withPodsMb: round(withPodsMb),
      sweepChildMb: round(sweepChildMb),
      targets: [
        {
          target: `agent peak RSS <= ${targetMb} MB`,
          value: `${round(Math.max(firstStartMb, withPodsMb))} MB`,
          met: Math.max(firstStartMb, withPodsMb) <= targetMb,
        },
      ],
    };
    console.log("\nmeshcni install: peak RSS (VmHWM), compiled binary");
    console.log(`${"agent, first start (copies its 117 MB binary)".padEnd(60)}${result.firstStartMb} MB`);
    console.log(`${`agent, ${pods} meshed pods on the node, a sweep every second`.padEnd(60)}${result.withPodsMb} MB`);
    console.log(`${`one sweep's child process (meshcni sweep, ${pods} pods)`.padEnd(60)}${result.sweepChildMb} MB`);
    for (const target of result.targets) console.log(`${target.met ? "met   " : "MISSED"}  ${target.target.padEnd(44)}${target.value}`);
    return result;
  } finally {
    await host.cleanup();
    await api.stop();
    cleanupMeasure();
  }
}
