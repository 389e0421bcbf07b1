import { describe, expect, it } from "vitest";
import type { AgentClient } from "../../../../src/agent/credentials.js";
import { ScopeCheck, unboundProblem } from "../../../../src/agent/node/scope-check.js";
import { Backoff } from "../../../../src/kube/backoff.js";
import { ApiStatusError } from "../../../../src/kube/errors.js";
import type { NodeApi } from "../../../../src/kube/node-api.js";
import { type LogEntry, memoryLogger } from "../../../kit/memory-logger.js";

type Answer = "bound" | "unbound" | "unsupported" | Error;

/** A client whose probe answers what the test says, counting the asks. */
function client(answers: Answer[]): AgentClient & { asked: () => number } {
  let asked = 0;
  const probeNodeScope = async () => {
    const answer = answers[Math.min(asked++, answers.length - 1)];
    if (answer instanceof Error) throw answer;
    return answer;
  };
  return { api: { probeNodeScope } as unknown as NodeApi, config: undefined as never, kubeconfig: "", asked: () => asked };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

describe("the agent's check that the node-scope policy binds it", () => {
  const setup = () => {
    const logs: LogEntry[] = [];
    let now = 0;
    const scheduled: number[] = [];
    const check = new ScopeCheck(
      memoryLogger(logs),
      (delayMs) => scheduled.push(delayMs),
      () => now,
      new Backoff(1000, 60_000, () => 0),
    );
    return { check, logs, scheduled, changes: () => scheduled.length, advance: (ms: number) => (now += ms) };
  };

  it("asks once per client while bound, and says so once", async () => {
    const { check, logs, changes, advance } = setup();
    const held = client(["bound"]);
    check.follow(held);
    await settle();
    advance(3_600_000);
    check.follow(held);
    await settle();
    expect(held.asked()).toBe(1);
    expect(check.problem()).toBeUndefined();
    expect(changes()).toBe(0);
    expect(logs.filter((entry) => entry.level !== "debug")).toEqual([]);
  });

  it("is a problem while unbound, asked again after 1 s, 2 s, 4 s … up to each minute, and lifted once the policy holds", async () => {
    const { check, logs, scheduled, advance } = setup();
    const answers: Answer[] = [...Array.from({ length: 9 }, () => "unbound" as const), "bound"];
    const renamed = client(answers);
    const asks: number[] = [];
    let at = 0;
    for (let i = 0; i < 200 && renamed.asked() < answers.length; i++) {
      check.follow(renamed);
      await settle();
      if (renamed.asked() > asks.length) asks.push(at);
      if (renamed.asked() < answers.length) expect(check.problem()).toBe(unboundProblem);
      // A reconcile before the recheck is due does not ask; the one the check asked for does.
      const next = scheduled.at(-1)!;
      const asked = renamed.asked();
      advance(next - 200);
      check.follow(renamed);
      await settle();
      expect(renamed.asked()).toBe(asked);
      advance(200);
      at += next;
    }
    const waits = asks.slice(1).map((time, i) => time - asks[i]!);
    expect(waits).toEqual([1100, 2100, 4100, 8100, 16100, 32100, 60100, 60100, 60100]);
    expect(check.problem()).toBeUndefined();
    expect(logs.at(-1)).toMatchObject({ level: "info", message: "the node-scope policy holds the agent to its node" });
  });

  it("says unbound at info while a new policy may still be taking effect, and as an error once, past 30 s", async () => {
    const { check, logs, scheduled, advance } = setup();
    const renamed = client(["unbound"]);
    const errors = () => logs.filter((entry) => entry.level === "error").map((entry) => entry.message);
    check.follow(renamed);
    await settle();
    expect(errors()).toEqual([]);
    expect(logs).toContainEqual(
      expect.objectContaining({ level: "info", message: expect.stringContaining("does not hold this agent yet") }),
    );
    while (renamed.asked() < 8) {
      advance(scheduled.at(-1)!);
      check.follow(renamed);
      await settle();
    }
    expect(errors()).toEqual([unboundProblem]);
  });

  it("before 1.30 says once that the token is as wide as its RBAC, and is no problem", async () => {
    const { check, logs } = setup();
    check.follow(client(["unsupported"]));
    await settle();
    check.follow(client(["unsupported"]));
    await settle();
    expect(check.problem()).toBeUndefined();
    expect(logs.filter((entry) => entry.message.includes("as wide as its RBAC"))).toHaveLength(1);
  });

  it("asks again at each follow after a failure, warning once per run of failures and never for a Node not registered", async () => {
    const { check, logs } = setup();
    const flaky = client([new Error("connection reset"), new Error("connection reset"), "bound", new Error("reset again")]);
    for (let i = 0; i < 3; i++) {
      check.follow(flaky);
      await settle();
    }
    expect(flaky.asked()).toBe(3);
    expect(logs.filter((entry) => entry.level === "warn")).toHaveLength(1);
    const unregistered = client([new ApiStatusError(404, 'nodes "n1" not found', undefined), "bound"]);
    check.follow(unregistered);
    await settle();
    check.follow(unregistered);
    await settle();
    expect(unregistered.asked()).toBe(2);
    expect(logs.filter((entry) => entry.level === "warn")).toHaveLength(1);
  });
});
