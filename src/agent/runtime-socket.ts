import { existsSync } from "node:fs";
import { connect } from "node:net";
import { criSocketOf } from "../cri/sockets.js";
import { errnoCode } from "../errors.js";
import { hostPaths } from "../host.js";

/** How long the runtime's socket may refuse connections before the agent calls itself dead. */
export const runtimeRefusalLimitMs = 10_000;

/**
 * Whether the container runtime's socket, as mounted into the agent's container, still
 * answers. The DaemonSet mounts the socket alone (not its directory, which holds the shims'
 * sockets), and a runtime restarted makes a new socket that the mount does not follow. So
 * a socket refusing connections past the limit fails liveness: kubelet restarts the
 * container, whose new mount is the new socket. A runtime that is down meanwhile is the
 * same: no pod starts then anyway, and kubelet restarts the container once it is back.
 * A connect at each reconcile, nothing sent; a slow answer is no refusal.
 */
export class RuntimeSocketCheck {
  private readonly path: string | undefined;
  private refusedSince: number | undefined;
  private busy = false;

  constructor(
    criSocket: string,
    hostRoot: string,
    private readonly now: () => number,
  ) {
    const onHost = hostPaths(hostRoot);
    const socket = criSocketOf(criSocket, (path) => existsSync(onHost(path)));
    this.path = socket === undefined ? undefined : onHost(socket);
  }

  /** Connects once (unless one is under way); resolves when the answer is taken in. */
  check(): Promise<void> {
    const path = this.path;
    if (!path || this.busy) return Promise.resolve();
    this.busy = true;
    return new Promise((resolve) => {
      const connection = connect(path);
      const settle = (refused: boolean) => {
        connection.destroy();
        this.busy = false;
        if (refused) this.refusedSince ??= this.now();
        else this.refusedSince = undefined;
        resolve();
      };
      connection.setTimeout(2000, () => settle(false));
      connection.once("connect", () => settle(false));
      connection.once("error", (error) => settle(errnoCode(error) === "ECONNREFUSED"));
    });
  }

  /** Why the agent is no longer alive, or undefined. */
  problem(): string | undefined {
    if (this.refusedSince === undefined) return undefined;
    if (this.now() - this.refusedSince < runtimeRefusalLimitMs) return undefined;
    return `the container runtime's socket ${this.path} has refused connections for ${runtimeRefusalLimitMs / 1000} s (a runtime restarted: this container's mount holds its old socket): not alive, for kubelet to restart this container`;
  }
}
