import type { GrpcObject, ServiceClientConstructor, ServiceError } from "@grpc/grpc-js";
import { podUidLabel, runtimeProto } from "./api.js";
import { sandboxNetns } from "./sandbox.js";

/** Where the runtime says a pod's netns is (the sandbox's, by its host path), or why it cannot say. */
export type SandboxLookup = { netns: string; sandbox: string } | { problem: string };

/** The container runtime, as kubelet asks it: which netns belongs to which pod. */
export interface PodRuntime {
  netnsOf(podUid: string): Promise<SandboxLookup>;
  close(): void;
}

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
  const call = <T>(method: string, request: object): Promise<T> =>
    new Promise((resolve, reject) => {
      client[method]!.call(client, request, { deadline: Date.now() + deadlineMs }, (error, response) =>
        error ? reject(new Error(`${method} on ${socket}: ${error.details || error.message}`)) : resolve(response as T),
      );
    });
  return {
    async netnsOf(podUid) {
      const { items } = await call<{ items: Array<{ id: string }> }>("ListPodSandbox", {
        filter: { labelSelector: { [podUidLabel]: podUid }, state: { state: "SANDBOX_READY" } },
      });
      if (items.length === 0) return { problem: "the container runtime has no ready sandbox for the pod" };
      if (items.length > 1) return { problem: `the container runtime has ${items.length} ready sandboxes for the pod` };
      const sandbox = items[0]!.id;
      const { info } = await call<{ info: Record<string, string> }>("PodSandboxStatus", { podSandboxId: sandbox, verbose: true });
      const netns = sandboxNetns(info);
      return netns ? { netns, sandbox } : { problem: `the container runtime's status of sandbox ${sandbox} names no network namespace` };
    },
    close: () => client.close(),
  };
}
