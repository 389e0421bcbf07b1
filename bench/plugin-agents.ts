// The plugin section's agents, and what their metrics say of the answers they gave.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { AgentHarness } from "../test/kit/agent/harness.js";
import { askAgent } from "../test/kit/agent/socket.js";
import type { FakeApiServer } from "../test/kit/api/server.js";
import { agentTemplate, until } from "../test/kit/common.js";
import { node } from "./plugin-baselines.js";

export interface BenchAgent {
  harness: AgentHarness;
  socket: string;
  dir: string;
}

/** An agent on the bench's "node" writing with `mode` into `dir`: it watches the node's pods and answers on its socket once its cache has the meshed pod. */
export async function startBenchAgent(api: FakeApiServer, mode: string, dir: string): Promise<BenchAgent> {
  mkdirSync(dir, { recursive: true });
  const harness = new AgentHarness({ onHost: true });
  const template = agentTemplate(dir, { linkerd: { "iptables-mode": mode } });
  await harness.startWithApi(api, ["--node", node, "--state-dir", dir, "--template", template, "--audit-seconds", "3600"], {
    POD_NAMESPACE: "meshcni",
    LOG_LEVEL: "info",
  });
  const socket = join(dir, "agent", "plugin.sock");
  await until(async () => {
    const answer = await askAgent(socket, { get: "pod", namespace: "bench", name: "meshed", uid: "uid-bench-meshed" }).catch(
      () => undefined,
    );
    return answer !== undefined && "cached" in answer && answer.cached;
  }, 10_000);
  return { harness, socket, dir };
}

export interface AnswerTotals {
  seconds: number;
  count: number;
}

/** The agent's answers to one verb so far, by its own clock (meshcni_plugin_answer_duration_seconds' sum and count; none yet: 0). */
export function answerTotals(metrics: string, verb: "ADD" | "DEL"): AnswerTotals {
  const total = (series: string) =>
    Number(
      new RegExp(`^meshcni_plugin_answer_duration_seconds_${series}\\{[^}]*verb="${verb}"[^}]*\\} (\\S+)$`, "m").exec(metrics)?.[1] ?? 0,
    );
  return { seconds: total("sum"), count: total("count") };
}

/** Each row's share of the agent's answers, by its own clock: its totals read just before and after each call. */
export class AgentShares {
  private readonly totals = new Map<string, AnswerTotals>();

  async measure<T>(name: string, verb: "ADD" | "DEL", harness: AgentHarness, counted: boolean, run: () => Promise<T>): Promise<T> {
    const before = answerTotals(await harness.scrape(), verb);
    const measured = await run();
    const after = answerTotals(await harness.scrape(), verb);
    const sum = this.totals.get(name) ?? { seconds: 0, count: 0 };
    if (counted)
      this.totals.set(name, { seconds: sum.seconds + after.seconds - before.seconds, count: sum.count + after.count - before.count });
    return measured;
  }

  /** Each row's mean answer, in ms (one decimal). */
  meansMs(): Record<string, number> {
    return Object.fromEntries([...this.totals].map(([name, { seconds, count }]) => [name, Math.round((seconds / count) * 10_000) / 10]));
  }
}
