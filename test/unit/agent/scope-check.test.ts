import { describe, expect, it } from "vitest";
import type { AgentClient } from "../../../src/agent/credentials.js";
import { ScopeCheck, unboundProblem } from "../../../src/agent/scope-check.js";
import { ApiStatusError } from "../../../src/kube/errors.js";
import type { NodeApi } from "../../../src/kube/node-api.js";
import { type LogEntry, memoryLogger } from "../../kit/fake-node.js";

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
    let changes = 0;
    const check = new ScopeCheck(
      memoryLogger(logs),
      () => changes++,
      () => now,
    );
    return { check, logs, changes: () => changes, advance: (ms: number) => (now += ms) };
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

  it("is a problem while unbound, asked again each minute, and lifted once the operator applies the policy", async () => {
    const { check, logs, changes, advance } = setup();
    const renamed = client(["unbound", "unbound", "bound"]);
    check.follow(renamed);
    await settle();
    expect(check.problem()).toBe(unboundProblem);
    expect(changes()).toBe(1);
    advance(30_000);
    check.follow(renamed);
    await settle();
    expect(renamed.asked()).toBe(1);
    advance(30_000);
    check.follow(renamed);
    await settle();
    expect(renamed.asked()).toBe(2);
    expect(logs.filter((entry) => entry.level === "error")).toHaveLength(1);
    advance(60_000);
    check.follow(renamed);
    await settle();
    expect(check.problem()).toBeUndefined();
    expect(changes()).toBe(2);
    expect(logs.at(-1)).toMatchObject({ level: "info", message: "the node-scope policy holds the agent to its node" });
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
