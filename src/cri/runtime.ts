import type { GrpcObject, ServiceClientConstructor, ServiceError } from "@grpc/grpc-js";
import { errorMessage } from "../errors.js";
import { podUidLabel, runtimeProto } from "./api.js";
import { sandboxNetns } from "./sandbox.js";

/** Where the runtime says a pod's netns is (the sandbox's, by its host path), or why it cannot say. */
export type SandboxLookup = { netns: string; sandbox: string } | { problem: string };

/** The container runtime, as kubelet asks it: which netns belongs to which pod. */
export interface PodRuntime {
  /**
   * Where the runtime says each pod's netns is, by pod UID: one ListPodSandbox for all,
   * then the sandboxes' statuses a few at a time; a pod still unanswered at `deadline`
   * (Date.now()'s clock) gets a problem saying so.
   */
  netnsOfPods(podUids: string[], deadline: number): Promise<Map<string, SandboxLookup>>;
  /** The ids of every sandbox the runtime has, in any state (the CNI container ids it gave its ADDs). */
  sandboxIds(deadline: number): Promise<Set<string>>;
  /** A sandbox's netns while the runtime has it ready; undefined for one not ready, or not there. */
  readyNetnsOf(sandbox: string, deadline: number): Promise<string | undefined>;
  /** One pod's ready sandboxes (by its UID label alone) and the netns of each. */
  readySandboxesOf(podUid: string, deadline: number): Promise<Array<{ sandbox: string; netns: string | undefined }>>;
  /** The runtime's verbose status's info: what it says of itself, the CNI config it loaded among it. */
  statusInfo(deadline: number): Promise<Record<string, string>>;
  close(): void;
}

/** gRPC's NOT_FOUND: the runtime has no such sandbox. */
const grpcNotFound = 5;

/** Statuses asked at once: a hung runtime costs a sweep one call's deadline, not one per pod. */
const statusesAtOnce = 4;

type Call = (request: object, options: { deadline: number }, callback: (error: ServiceError | null, response: unknown) => void) => void;

/**
 * A CRI v1 client over the runtime's unix socket (containerd's or CRI-O's), through
 * @grpc/grpc-js, loaded only by the commands that look into pods' netns. Every call has a
 * deadline; a refused one rejects naming the call and the runtime's message.
 */
export async function connectRuntime(socket: string, deadlineMs = 3000): Promise<PodRuntime> {
  const [grpc, { fromJSON }, protobuf] = await Promise.all([import("@grpc/grpc-js"), import("@grpc/proto-loader"), import("protobufjs")]);
  const definition = fromJSON(protobuf.default.parse(runtimeProto).root.toJSON(), { longs: Number, enums: String, defaults: true });
  const { RuntimeService } = (grpc.loadPackageDefinition(definition).runtime as GrpcObject).v1 as GrpcObject as {
    RuntimeService: ServiceClientConstructor;
  };
  const client = new RuntimeService(`unix://${socket}`, grpc.credentials.createInsecure()) as unknown as Record<string, Call> & {
    close(): void;
  };
  /** One call, within deadlineMs and never past `until`. */
  const call = <T>(method: string, request: object, until = Number.POSITIVE_INFINITY): Promise<T> =>
    new Promise((resolve, reject) => {
      client[method]!.call(client, request, { deadline: Math.min(Date.now() + deadlineMs, until) }, (error, response) =>
        error
          ? reject(Object.assign(new Error(`${method} on ${socket}: ${error.details || error.message}`), { grpcCode: error.code }))
          : resolve(response as T),
      );
    });
  const statusOf = async (sandbox: string, until: number): Promise<SandboxLookup> => {
    const request = { podSandboxId: sandbox, verbose: true };
    const { info } = await call<{ info: Record<string, string> }>("PodSandboxStatus", request, until);
    const netns = sandboxNetns(info);
    return netns ? { netns, sandbox } : { problem: `the container runtime's status of sandbox ${sandbox} names no network namespace` };
  };
  return {
    async netnsOfPods(podUids, deadline) {
      const ready = { filter: { state: { state: "SANDBOX_READY" } } };
      const { items } = await call<{ items: Array<{ id: string; labels: Record<string, string> }> }>("ListPodSandbox", ready, deadline);
      // The pods' sandboxes by the label kubelet gives each, read once for all.
      const byPod = new Map<string, string[]>();
      for (const { id, labels } of items) {
        const uid = labels[podUidLabel];
        if (uid) byPod.set(uid, [...(byPod.get(uid) ?? []), id]);
      }
      const found = new Map<string, SandboxLookup>();
      const toAsk: Array<[string, string]> = [];
      for (const uid of podUids) {
        const sandboxes = byPod.get(uid) ?? [];
        if (sandboxes.length === 1) toAsk.push([uid, sandboxes[0]!]);
        else
          found.set(uid, {
            problem:
              sandboxes.length === 0
                ? "the container runtime has no ready sandbox for the pod"
                : `the container runtime has ${sandboxes.length} ready sandboxes for the pod`,
          });
      }
      const worker = async () => {
        for (let next = toAsk.shift(); next; next = toAsk.shift()) {
          const [uid, sandbox] = next;
          if (Date.now() >= deadline) {
            found.set(uid, { problem: "the container runtime did not answer for it within the sweep's time" });
            continue;
          }
          found.set(
            uid,
            await statusOf(sandbox, deadline).catch((error: unknown) => ({
              problem: `cannot ask the container runtime: ${errorMessage(error)}`,
            })),
          );
        }
      };
      await Promise.all(Array.from({ length: statusesAtOnce }, worker));
      return found;
    },
    async readyNetnsOf(sandbox, deadline) {
      const request = { podSandboxId: sandbox, verbose: true };
      // Only "no such sandbox" is an answer; a runtime that failed or was slow has said nothing.
      const found = await call<{ status?: { state?: string }; info: Record<string, string> }>("PodSandboxStatus", request, deadline).catch(
        (error: { grpcCode?: number }) => {
          if (error.grpcCode === grpcNotFound) return undefined;
          throw error;
        },
      );
      return found?.status?.state === "SANDBOX_READY" ? sandboxNetns(found.info) : undefined;
    },
    async readySandboxesOf(podUid, deadline) {
      const filter = { state: { state: "SANDBOX_READY" }, labelSelector: { [podUidLabel]: podUid } };
      const { items } = await call<{ items: Array<{ id: string }> }>("ListPodSandbox", { filter }, deadline);
      return Promise.all(
        items.map(async ({ id }) => {
          const found = await statusOf(id, deadline);
          return { sandbox: id, netns: "netns" in found ? found.netns : undefined };
        }),
      );
    },
    async sandboxIds(deadline) {
      const { items } = await call<{ items: Array<{ id: string }> }>("ListPodSandbox", {}, deadline);
      return new Set(items.map(({ id }) => id));
    },
    async statusInfo(deadline) {
      return (await call<{ info: Record<string, string> }>("Status", { verbose: true }, deadline)).info;
    },
    close: () => client.close(),
  };
}
