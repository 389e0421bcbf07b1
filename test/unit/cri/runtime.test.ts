import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { fromJSON } from "@grpc/proto-loader";
import protobuf from "protobufjs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { podUidLabel, runtimeProto } from "../../../src/cri/api.js";
import { connectRuntime } from "../../../src/cri/runtime.js";
import { FakeCriRuntime } from "../../kit/cri/fake-runtime.js";

/** A CRI runtime on a unix socket: ten ready sandboxes, and a PodSandboxStatus that answers only for the first. */
async function hungRuntime(socket: string) {
  const definition = fromJSON(protobuf.parse(runtimeProto).root.toJSON(), { longs: Number, enums: String, defaults: true });
  const { RuntimeService } = (grpc.loadPackageDefinition(definition).runtime as grpc.GrpcObject).v1 as grpc.GrpcObject as {
    RuntimeService: grpc.ServiceClientConstructor;
  };
  const calls: string[] = [];
  const sandboxes = Array.from({ length: 10 }, (_, i) => ({ id: `s${i}`, labels: { [podUidLabel]: `uid-${i}` } }));
  const spec = (i: number) =>
    JSON.stringify({ runtimeSpec: { linux: { namespaces: [{ type: "network", path: `/var/run/netns/cni-${i}` }] } } });
  const server = new grpc.Server();
  server.addService(RuntimeService.service, {
    ListPodSandbox: (_call: unknown, callback: grpc.sendUnaryData<unknown>) => {
      calls.push("ListPodSandbox");
      callback(null, { items: sandboxes });
    },
    PodSandboxStatus: (call: grpc.ServerUnaryCall<{ podSandboxId: string }, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      calls.push(`PodSandboxStatus ${call.request.podSandboxId}`);
      // A runtime stuck on every sandbox but the first: never answers.
      if (call.request.podSandboxId === "s0") callback(null, { info: { info: spec(0) } });
    },
  });
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (error) => (error ? reject(error) : resolve())),
  );
  return { calls, stop: () => server.forceShutdown() };
}

describe("asking the container runtime where pods' netns are", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "meshcni-cri-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("lists once for all the pods, asks their statuses a few at a time, and stops at the sweep's deadline", async () => {
    const socket = join(dir, "cri.sock");
    const runtime = await hungRuntime(socket);
    const client = await connectRuntime(socket);
    try {
      const uids = [...Array.from({ length: 10 }, (_, i) => `uid-${i}`), "uid-none"];
      const started = Date.now();
      const found = await client.netnsOfPods(uids, started + 1500);
      // One pod per call's 3 s, one after another, would be 27 s; four at a time within the deadline, under 2 s.
      expect(Date.now() - started).toBeLessThan(2500);
      expect(found.get("uid-0")).toEqual({ netns: "/var/run/netns/cni-0", sandbox: "s0" });
      expect(found.get("uid-none")).toEqual({ problem: "the container runtime has no ready sandbox for the pod" });
      for (let i = 1; i < 10; i++) expect(found.get(`uid-${i}`)).toMatchObject({ problem: expect.stringMatching(/runtime/) });
      expect(runtime.calls.filter((call) => call === "ListPodSandbox")).toHaveLength(1);
      // The first four at once, and no more than one batch of hung calls: the rest are past the deadline.
      expect(runtime.calls.filter((call) => call.startsWith("PodSandboxStatus")).length).toBeLessThanOrEqual(8);
    } finally {
      client.close();
      runtime.stop();
    }
  }, 10_000);

  it("takes the pod's ready sandbox where the runtime still lists a replaced one (NOTREADY), and counts both as the runtime's", async () => {
    const runtime = new FakeCriRuntime();
    await runtime.start();
    const client = await connectRuntime(runtime.socket);
    try {
      runtime.sandboxes.set("uid-web", "/var/run/netns/cni-new");
      runtime.notReady.set("uid-web", ["/var/run/netns/cni-old"]);
      runtime.notReady.set("uid-gone", ["/var/run/netns/cni-gone"]);
      const found = await client.netnsOfPods(["uid-web", "uid-gone"], Date.now() + 3000);
      expect(found.get("uid-web")).toMatchObject({ netns: "/var/run/netns/cni-new" });
      expect(found.get("uid-gone")).toEqual({ problem: "the container runtime has no ready sandbox for the pod" });
      expect((await client.sandboxIds(Date.now() + 3000))?.size).toBe(3);
    } finally {
      client.close();
      await runtime.stop();
    }
  });
});
