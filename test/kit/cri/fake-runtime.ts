import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { fromJSON } from "@grpc/proto-loader";
import protobuf from "protobufjs";
import { podUidLabel, runtimeProto } from "../../../src/cri/api.js";

type Handler = (call: { request: Record<string, unknown> }, callback: grpc.sendUnaryData<unknown>) => void;

/**
 * A container runtime's CRI socket as kubelet's runtime answers it, for the pods a test
 * starts in plain netns: which sandbox (and netns) each pod UID has, and each sandbox's
 * verbose status in containerd's layout (the OCI spec's network namespace path). The real
 * containerd answers the same calls in test/cri/.
 */
export class FakeCriRuntime {
  private readonly dir = mkdtempSync(join(tmpdir(), "meshcni-cri-"));
  readonly socket: string;
  /**
   * What its verbose Status says it loaded (`cniconfig`, go-cni's ConfigResult), asked anew at
   * each call: a runtime that reloads at once on any change (containerd waits for an event in
   * its conf dir: the real one is in test/cluster/). None: no `cniconfig`, as CRI-O answers.
   */
  cniConfig: (() => string) | undefined;
  /** Each pod's (by UID) netns path, as the runtime made it: its ready sandbox. */
  readonly sandboxes = new Map<string, string>();
  /**
   * Each pod's sandboxes the runtime still lists but no longer runs (SANDBOX_NOTREADY: one
   * kubelet replaced), by their netns paths: listed, and left out when the ready ones are asked for.
   */
  readonly notReady = new Map<string, string[]>();
  /** Every call it answered, by method name. */
  readonly calls: string[] = [];
  private server: grpc.Server | undefined;

  /** `socket`: where it listens (a test's host root, say); a temp dir of its own by default. */
  constructor(socket?: string) {
    this.socket = socket ?? join(this.dir, "cri.sock");
  }

  /** A sandbox's id: the CNI container id its ADD was given, cnitool's, from the netns path (cnitool/cnitool.go). */
  sandboxIdOf(netns: string): string {
    return `cnitool-${createHash("sha512").update(netns).digest("hex").slice(0, 20)}`;
  }

  async start(): Promise<void> {
    const definition = fromJSON(protobuf.parse(runtimeProto).root.toJSON(), { longs: Number, enums: String, defaults: true });
    const { RuntimeService } = (grpc.loadPackageDefinition(definition).runtime as grpc.GrpcObject).v1 as {
      RuntimeService: grpc.ServiceClientConstructor;
    };
    const idOf = (netns: string) => this.sandboxIdOf(netns);
    const all = () => [
      ...[...this.sandboxes].map(([uid, netns]) => ({ uid, netns, state: "SANDBOX_READY" })),
      ...[...this.notReady].flatMap(([uid, paths]) => paths.map((netns) => ({ uid, netns, state: "SANDBOX_NOTREADY" }))),
    ];
    const handlers: Record<string, Handler> = {
      Version: (_call, done) => done(null, { version: "0.1.0", runtimeName: "fake-cri", runtimeVersion: "1", runtimeApiVersion: "v1" }),
      ListPodSandbox: ({ request }, done) => {
        // As containerd filters: by id, by state when one is given, by labels.
        const filter = (request.filter ?? {}) as { id?: string; state?: { state: string } | null; labelSelector?: Record<string, string> };
        const uid = filter.labelSelector?.[podUidLabel];
        const items = all()
          .filter((sandbox) => uid === undefined || sandbox.uid === uid)
          .filter((sandbox) => !filter.state || sandbox.state === filter.state.state)
          .filter((sandbox) => !filter.id || idOf(sandbox.netns) === filter.id)
          .map(({ uid, netns, state }) => ({ id: idOf(netns), state, labels: { [podUidLabel]: uid } }));
        done(null, { items });
      },
      Status: (_call, done) => done(null, { info: this.cniConfig ? { cniconfig: this.cniConfig() } : {} }),
      PodSandboxStatus: ({ request }, done) => {
        const found = all().find((sandbox) => idOf(sandbox.netns) === request.podSandboxId);
        if (found === undefined)
          return done({ code: grpc.status.NOT_FOUND, details: `an error occurred when try to find sandbox ${request.podSandboxId}` });
        const spec = { linux: { namespaces: [{ type: "pid" }, { type: "network", path: found.netns }] } };
        done(null, {
          status: { id: request.podSandboxId, state: found.state },
          info: { info: JSON.stringify({ pid: 1, runtimeSpec: spec }) },
        });
      },
    };
    const server = new grpc.Server();
    server.addService(
      RuntimeService.service,
      Object.fromEntries(
        Object.entries(handlers).map(([method, handle]) => [
          method,
          (call: { request: Record<string, unknown> }, done: grpc.sendUnaryData<unknown>) => {
            this.calls.push(method);
            handle(call, done);
          },
        ]),
      ),
    );
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`unix://${this.socket}`, grpc.ServerCredentials.createInsecure(), (error) => (error ? reject(error) : resolve())),
    );
    this.server = server;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.tryShutdown(() => resolve()) : resolve()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}
