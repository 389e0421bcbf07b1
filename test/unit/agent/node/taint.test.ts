import type { V1Taint } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { TaintKeeper } from "../../../../src/agent/node/taint.js";
import { ApiStatusError } from "../../../../src/kube/errors.js";
import type { NodeApi } from "../../../../src/kube/node-api.js";
import { parseTaint } from "../../../../src/taint-spec.js";
import { until } from "../../../kit/common.js";
import { type LogEntry, memoryLogger } from "../../../kit/memory-logger.js";

describe("startup taint", () => {
  it("reads kubectl's key[=value][:Effect]", () => {
    expect(parseTaint("meshcni.io/not-ready")).toEqual({ key: "meshcni.io/not-ready", effect: "NoSchedule" });
    expect(parseTaint("meshcni.io/not-ready=true:NoExecute")).toEqual({ key: "meshcni.io/not-ready", value: "true", effect: "NoExecute" });
    expect(() => parseTaint("a:Sometimes")).toThrow(/--startup-taint/);
    expect(() => parseTaint("bad key")).toThrow(/--startup-taint/);
  });
});

/** A node's taints behind a NodeApi that answers each setNodeTaints with the next of `answers` (undefined: stored). */
function fakeNode(answers: Array<ApiStatusError | undefined>) {
  const node = { taints: [{ key: "meshcni.io/not-ready", effect: "NoSchedule" }] as V1Taint[], version: 1, writes: 0 };
  const api = {
    nodeTaints: async () => ({ taints: node.taints, resourceVersion: String(node.version) }),
    setNodeTaints: async (taints: V1Taint[]) => {
      node.writes++;
      const answer = answers.shift();
      if (answer) throw answer;
      node.taints = taints;
      node.version++;
    },
  } as unknown as NodeApi;
  return { node, api };
}

describe("TaintKeeper", () => {
  const spec = parseTaint("meshcni.io/not-ready:NoSchedule");
  const lifted = async (answers: Array<ApiStatusError | undefined>) => {
    const { node, api } = fakeNode(answers);
    const retries: number[] = [];
    const keeper = new TaintKeeper(spec, false, memoryLogger([]), () => retries.push(node.writes));
    keeper.follow(api, true, undefined);
    await until(() => node.writes > 0 && (node.taints.length === 0 || retries.length > 0), 2000);
    return { node, retries };
  };

  it("reads the node again and retries when it changed meanwhile (409 Conflict, kube-apiserver's answer to a stale resourceVersion)", async () => {
    const { node, retries } = await lifted([new ApiStatusError(409, "the object has been modified", undefined)]);
    expect(node.taints).toEqual([]);
    expect(node.writes).toBe(2);
    expect(retries).toEqual([]);
  });

  it("does not retry at once what admission refused (422): it hands the retry to its caller", async () => {
    const { node, retries } = await lifted([new ApiStatusError(422, "denied by ValidatingAdmissionPolicy", undefined)]);
    expect(node.taints).toHaveLength(1);
    expect(node.writes).toBe(1);
    expect(retries).toEqual([1]);
  });
});

describe("TaintKeeper with --restore-taint", () => {
  const spec = parseTaint("meshcni.io/not-ready:NoSchedule");
  const untainted = { spec: { taints: [] as V1Taint[] } };

  it("puts the taint back on its node while the agent is not ready, and lifts it again once ready", async () => {
    const { node, api } = fakeNode([]);
    node.taints = [];
    const logs: LogEntry[] = [];
    const keeper = new TaintKeeper(spec, true, memoryLogger(logs), () => undefined);
    keeper.follow(api, false, untainted);
    await until(() => node.taints.length === 1, 2000);
    expect(node.taints).toEqual([{ key: "meshcni.io/not-ready", effect: "NoSchedule" }]);
    await until(() => logs.some((entry) => entry.message === "startup taint restored"), 2000);
    keeper.follow(api, true, { spec: { taints: node.taints } });
    await until(() => node.taints.length === 0, 2000);
    expect(node.writes).toBe(2);
  });

  it("without it, leaves a node the agent lifted the taint from untainted, however long it is not ready", async () => {
    const { node, api } = fakeNode([]);
    node.taints = [];
    const keeper = new TaintKeeper(spec, false, memoryLogger([]), () => undefined);
    keeper.follow(api, false, untainted);
    keeper.follow(api, false, untainted);
    // Decided at once, without asking: no write started.
    expect(node.writes).toBe(0);
    expect(node.taints).toEqual([]);
  });
});
