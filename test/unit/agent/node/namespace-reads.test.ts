import type { V1Namespace, V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { NamespaceReads, namespaceFreshness, prefetchNamespaceOf, sweepView } from "../../../../src/agent/node/namespace-reads.js";
import { annotations } from "../../../../src/mesh/pod.js";
import { podObject } from "../../../kit/api/server.js";

/** An API whose namespace reads wait until released, counted, with a clock the test moves. */
function scene() {
  let now = 0;
  const asked: string[] = [];
  const counts: string[] = [];
  const pending: Array<{ name: string; answer: (namespace: V1Namespace) => void; fail: (error: Error) => void }> = [];
  const reads = new NamespaceReads(
    (name) =>
      new Promise((answer, fail) => {
        asked.push(name);
        pending.push({ name, answer, fail });
      }),
    () => now,
    (cause, result) => counts.push(`${cause} ${result}`),
  );
  const annotated = (name: string, value: string) =>
    ({ metadata: { name, annotations: { "config.linkerd.io/skip-inbound-ports": value, other: "x".repeat(100) } } }) as V1Namespace;
  const answerAll = async (value = "80") => {
    for (const { name, answer } of pending.splice(0)) answer(annotated(name, value));
    await new Promise((resolve) => setImmediate(resolve));
  };
  return {
    reads,
    asked,
    counts,
    pending,
    answerAll,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

const skipOf = (namespace: V1Namespace | undefined) => namespace?.metadata?.annotations?.["config.linkerd.io/skip-inbound-ports"];

describe("namespaces read as decisions need them, with no watch", () => {
  it("answers from a read within the bound asked, reads again past it, and keeps only Linkerd's annotations", async () => {
    const { reads, asked, answerAll, advance } = scene();
    const first = reads.get("shop", namespaceFreshness.addMs, "add");
    await answerAll("80");
    expect((await first).metadata).toEqual({ name: "shop", annotations: { "config.linkerd.io/skip-inbound-ports": "80" } });
    advance(namespaceFreshness.addMs);
    expect(skipOf(reads.within("shop", namespaceFreshness.addMs))).toBe("80");
    expect(skipOf(await reads.get("shop", namespaceFreshness.addMs, "add"))).toBe("80");
    expect(asked).toEqual(["shop"]);
    advance(1);
    expect(reads.within("shop", namespaceFreshness.addMs)).toBeUndefined();
    const again = reads.get("shop", namespaceFreshness.addMs, "add");
    await answerAll("81");
    expect(skipOf(await again)).toBe("81");
    expect(asked).toEqual(["shop", "shop"]);
  });

  it("makes one request for reads asked while one is in flight, and counts each read by cause and result", async () => {
    const { reads, asked, counts, pending, answerAll } = scene();
    const both = Promise.all([reads.read("shop", "add"), reads.read("shop", "add"), reads.get("shop", 0, "sweep")]);
    await answerAll();
    expect((await both).map(skipOf)).toEqual(["80", "80", "80"]);
    expect(asked).toEqual(["shop"]);
    const failing = reads.read("gone", "add");
    pending.shift()?.fail(new Error("404"));
    await expect(failing).rejects.toThrow("404");
    expect(reads.within("gone", Infinity)).toBeUndefined();
    expect(counts).toEqual(["add read", "add failed"]);
  });

  it("keeps the later read when an earlier one answers last", async () => {
    const { reads, pending, advance } = scene();
    const older = reads.read("shop", "add");
    const [first] = pending.splice(0);
    advance(1000);
    // The same name in flight is joined: a read after the first's answer is a new one.
    first?.answer({ metadata: { name: "shop", annotations: { "config.linkerd.io/skip-inbound-ports": "1" } } });
    await older;
    advance(1000);
    const newer = reads.read("shop", "add");
    pending.shift()?.answer({ metadata: { name: "shop", annotations: { "config.linkerd.io/skip-inbound-ports": "2" } } });
    await newer;
    expect(skipOf(reads.within("shop", 0))).toBe("2");
  });

  it("reads ahead of a meshed pod's ADD only when its own annotations leave some to the namespace, and not twice within half the ADD's bound", async () => {
    const { reads, asked, answerAll, advance } = scene();
    const meshed = podObject("shop", "web", { proxy: "container", nodeName: "n1" }) as V1Pod;
    prefetchNamespaceOf(podObject("plain", "app", { nodeName: "n1" }) as V1Pod, reads);
    prefetchNamespaceOf(podObject("shop", "running", { proxy: "container", nodeName: "n1", podIP: "10.0.0.9" }) as V1Pod, reads);
    prefetchNamespaceOf(podObject("shop", "leaving", { proxy: "container", nodeName: "n1", deleting: true }) as V1Pod, reads);
    const decided = Object.fromEntries(Object.values(annotations).map((key) => [key, "1"]));
    prefetchNamespaceOf(podObject("shop", "own", { proxy: "container", nodeName: "n1", annotations: decided }) as V1Pod, reads);
    expect(asked).toEqual([]);
    prefetchNamespaceOf(meshed, reads);
    prefetchNamespaceOf(meshed, reads);
    await answerAll();
    advance(namespaceFreshness.addMs / 2);
    prefetchNamespaceOf(meshed, reads);
    expect(asked).toEqual(["shop"]);
    advance(1);
    prefetchNamespaceOf(meshed, reads);
    expect(asked).toEqual(["shop", "shop"]);
  });

  it("gives a sweep the meshed pods' namespaces read within its bound, leaves out one it cannot read, and drops what no pod needs", async () => {
    const { reads, asked, pending, advance } = scene();
    const pods = [
      podObject("shop", "web", { proxy: "container", nodeName: "n1" }),
      podObject("bank", "api", { proxy: "container", nodeName: "n1" }),
      podObject("plain", "app", { nodeName: "n1" }),
    ] as V1Pod[];
    expect(await sweepView({ fresh: () => false, values: () => pods }, reads)).toBeUndefined();
    const viewing = sweepView({ fresh: () => true, values: () => pods }, reads);
    await new Promise((resolve) => setImmediate(resolve));
    expect(asked.sort()).toEqual(["bank", "shop"]);
    for (const { name, answer, fail } of pending.splice(0)) {
      if (name === "shop") answer({ metadata: { name } });
      else fail(new Error("503"));
    }
    const view = await viewing;
    expect(view?.pods).toHaveLength(3);
    expect(view?.namespaces).toEqual([{ metadata: { name: "shop" } }]);
    // Once no pod of the node is in it and its read is older than a sweep takes, it is dropped.
    advance(namespaceFreshness.sweepMs + 1);
    reads.keepOnly(new Set(["bank"]));
    expect(reads.within("shop", Infinity)).toBeUndefined();
  });
});
