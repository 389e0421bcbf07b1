import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";

/** A pod sandbox's config as the tests give it (the CRI's PodSandboxConfig, camelCased). */
export interface SandboxConfig {
  metadata: { name: string; uid: string; namespace: string; attempt?: number };
  hostname?: string;
  logDirectory?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  linux?: {
    cgroupParent?: string;
    securityContext?: { namespaceOptions?: { network?: "POD" | "NODE"; pid?: "POD" | "CONTAINER" | "NODE" }; privileged?: boolean };
  };
}

export interface SandboxStatus {
  status: { id: string; state: "SANDBOX_READY" | "SANDBOX_NOTREADY"; network: { ip: string } | null };
  info: Record<string, string>;
}

export interface ContainerConfig {
  metadata: { name: string; attempt?: number };
  image: { image: string };
  command?: string[];
  args?: string[];
  envs?: Array<{ key: string; value: string }>;
  mounts?: Array<{
    containerPath: string;
    hostPath: string;
    readonly?: boolean;
    propagation?: "PROPAGATION_PRIVATE" | "PROPAGATION_HOST_TO_CONTAINER" | "PROPAGATION_BIDIRECTIONAL";
  }>;
  logPath?: string;
  linux?: {
    securityContext?: {
      capabilities?: { addCapabilities?: string[]; dropCapabilities?: string[] };
      privileged?: boolean;
      runAsUser?: { value: number };
      readonlyRootfs?: boolean;
      noNewPrivs?: boolean;
      seccomp?: { profileType: "RuntimeDefault" | "Unconfined" | "Localhost"; localhostRef?: string };
    };
  };
}

export interface ContainerStatus {
  status: {
    id: string;
    state: "CONTAINER_CREATED" | "CONTAINER_RUNNING" | "CONTAINER_EXITED" | "CONTAINER_UNKNOWN";
    exitCode: number;
    reason: string;
    message: string;
  };
}

type Call = (request: object, callback: (error: grpc.ServiceError | null, response: unknown) => void) => void;

/**
 * A CRI v1 RuntimeService client over the runtime's unix socket, as kubelet talks to it:
 * the calls the tests make, each a promise; a refused call rejects with the runtime's
 * message (`details`).
 */
export class CriClient {
  private readonly service: Record<string, Call> & grpc.Client;

  constructor(socket: string) {
    const definition = loadSync(join(import.meta.dirname, "runtime.proto"), { enums: String, longs: Number, defaults: true });
    const { RuntimeService } = (grpc.loadPackageDefinition(definition).runtime as grpc.GrpcObject).v1 as {
      RuntimeService: grpc.ServiceClientConstructor;
    };
    this.service = new RuntimeService(`unix://${socket}`, grpc.credentials.createInsecure()) as never;
  }

  private call<T>(method: string, request: object): Promise<T> {
    return new Promise((resolve, reject) => {
      this.service[method]!.call(this.service, request, (error, response) =>
        error ? reject(new Error(`${method}: ${error.details || error.message}`)) : resolve(response as T),
      );
    });
  }

  version = () => this.call<{ runtimeName: string; runtimeVersion: string; runtimeApiVersion: string }>("Version", { version: "v1" });
  status = () =>
    this.call<{ status: { conditions: Array<{ type: string; status: boolean; reason: string; message: string }> } }>("Status", {});
  runPodSandbox = async (config: SandboxConfig) => (await this.call<{ podSandboxId: string }>("RunPodSandbox", { config })).podSandboxId;
  stopPodSandbox = (podSandboxId: string) => this.call<object>("StopPodSandbox", { podSandboxId });
  removePodSandbox = (podSandboxId: string) => this.call<object>("RemovePodSandbox", { podSandboxId });
  listPodSandbox = async () =>
    (await this.call<{ items: Array<{ id: string; state: string; labels: Record<string, string> }> }>("ListPodSandbox", {})).items;
  podSandboxStatus = (podSandboxId: string) => this.call<SandboxStatus>("PodSandboxStatus", { podSandboxId, verbose: true });
  createContainer = async (podSandboxId: string, config: ContainerConfig, sandboxConfig: SandboxConfig) =>
    (await this.call<{ containerId: string }>("CreateContainer", { podSandboxId, config, sandboxConfig })).containerId;
  startContainer = (containerId: string) => this.call<object>("StartContainer", { containerId });
  stopContainer = (containerId: string, timeout = 10) => this.call<object>("StopContainer", { containerId, timeout });
  removeContainer = (containerId: string) => this.call<object>("RemoveContainer", { containerId });
  containerStatus = (containerId: string) => this.call<ContainerStatus>("ContainerStatus", { containerId, verbose: false });

  close(): void {
    this.service.close();
  }
}
