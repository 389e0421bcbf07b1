import type { V1Taint } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { parseTaint, TaintKeeper } from "../../../src/agent/taint.js";
import { ApiStatusError } from "../../../src/kube/errors.js";
import type { NodeApi } from "../../../src/kube/node-api.js";
import { until } from "../../kit/common.js";
import { memoryLogger } from "../../kit/fake-node.js";

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
