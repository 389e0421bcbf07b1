// How stale the agent's answers get around an API server's failures (issue 28): the compiled
// agent against the in-test API server, asked for a pod every 20 ms through its socket.
//  - restart: every connection reset and a new watch cache (resumes get 410), then 4 s of
//    503s and 3 s of 429 "storage is (re)initializing"; the pod's annotation changed during it.
//  - 410: the pod changed where the watch missed it, the watch's resume refused with 410.
// Each round reports the stale answers (the old annotation) given after the server answered
// again, and the time from then to the first fresh answer.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { AgentHarness } from "../test/kit/agent/harness.js";
import { conflist } from "../test/kit/agent/host.js";
import { askAgent } from "../test/kit/agent/socket.js";
import { FakeApiServer, podObject } from "../test/kit/api/server.js";
import { sleep, until } from "../test/kit/common.js";
import { saveResults } from "./stats.js";

const skip = "config.linkerd.io/skip-subnets";
const rounds = 3;
/** This bench's figures for the agent before 5f1c44d (each failed retry renewed the grace; a 410 kept the cache standing). */
const before = {
  restart: "97 stale answers, the last 6398 ms after recovery",
  "410": "88 stale answers, the first fresh one 1844 ms after the 410",
};

interface Round {
  staleAfterRecoveryMs: number;
  staleAnswersAfterRecovery: number;
  freshAfterRecoveryMs: number;
}

async function round(scenario: "restart" | "410"): Promise<Round> {
  const api = await new FakeApiServer().start();
  api.watches.bookmarkIntervalMs = 1000;
  const host = new AgentHarness();
  const annotate = (value: string, quietly = false) =>
    api.addPod(podObject("shop", "web", { proxy: "container", nodeName: "n1", annotations: { [skip]: value } }), { quietly });
  try {
    annotate("10.1.0.0/16");
    writeFileSync(host.path("10-calico.conflist"), conflist("k8s-pod-network", [{ type: "calico" }]));
    await host.startWithApi(api, ["--node", "n1", "--watch-timeout-seconds", "2", "--audit-seconds", "600"]);
    const socket = join(host.stateDir, "agent", "plugin.sock");
    const ask = async () => {
      const answer = await askAgent(socket, { get: "pod", namespace: "shop", name: "web", uid: "uid-shop-web" });
      if (!("object" in answer)) return undefined;
      return (answer.object as { metadata: { annotations?: Record<string, string> } }).metadata.annotations?.[skip];
    };
    await until(async () => (await ask().catch((error: unknown) => String(error))) === "10.1.0.0/16", 15_000).catch(async () => {
      throw new Error(`the agent never answered: ${await ask().catch((error: unknown) => String(error))}`);
    });
    await sleep(3000);
    let recoveredAt: number;
    if (scenario === "restart") {
      api.restart();
      api.faults.set("/api/v1/pods", { status: 503 });
      annotate("10.2.0.0/16", true);
      await sleep(4000);
      api.faults.delete("/api/v1/pods");
      api.throttle = { until: Date.now() + 3000, retryAfterSeconds: 1, path: /^\/api\/v1\/pods$/ };
      recoveredAt = performance.now() + 3000;
    } else {
      annotate("10.2.0.0/16", true);
      api.watchFaults.set("/api/v1/pods", { status: 410 });
      const watches = api.requests.filter((request) => request.path === "/api/v1/pods" && request.query.watch === "true").length;
      await until(
        () => api.requests.filter((request) => request.path === "/api/v1/pods" && request.query.watch === "true").length > watches,
        10_000,
        5,
      );
      api.watchFaults.delete("/api/v1/pods");
      recoveredAt = performance.now();
    }
    let lastStaleAt = recoveredAt;
    let staleAnswers = 0;
    let freshAt: number | undefined;
    for (const end = recoveredAt + 12_000; performance.now() < end; await sleep(20)) {
      const answer = await ask();
      const at = performance.now();
      if (at < recoveredAt) continue;
      if (answer === "10.1.0.0/16") {
        staleAnswers++;
        lastStaleAt = at;
      } else if (answer === "10.2.0.0/16") freshAt ??= at;
    }
    return {
      staleAfterRecoveryMs: Math.round(lastStaleAt - recoveredAt),
      staleAnswersAfterRecovery: staleAnswers,
      freshAfterRecoveryMs: Math.round((freshAt ?? Number.NaN) - recoveredAt),
    };
  } finally {
    await host.cleanup();
    await api.stop();
  }
}

export async function benchFreshness(): Promise<void> {
  const results: Record<string, Round[]> = {};
  for (const scenario of ["restart", "410"] as const) {
    const measured: Round[] = [];
    for (let i = 0; i < rounds; i++) measured.push(await round(scenario));
    results[scenario] = measured;
    const worst = (key: keyof Round) => Math.max(...measured.map((one) => one[key]));
    console.log(
      `freshness after ${scenario}: stale answers after recovery ${worst("staleAnswersAfterRecovery")} (target 0), ` +
        `last ${worst("staleAfterRecoveryMs")} ms after it; first fresh answer ${worst("freshAfterRecoveryMs")} ms after it ` +
        `(worst of ${rounds}; before the fix of 5f1c44d, this bench: ${before[scenario]})`,
    );
  }
  saveResults("freshness", results);
}
