import { fstatSync } from "node:fs";
import type { Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { maxAskBytes } from "../../agent-socket.js";
import { errorMessage } from "../../errors.js";
import { libc } from "../../libc.js";
import type { NetnsId } from "../../netns/enter.js";

/** Whether a caller on the plugin's socket may ask: undefined yes, else why not (and its pid, when the kernel gave one). */
export type PeerCheck = (connection: Socket) => { reason: string; pid?: number } | undefined;

/**
 * A caller's first bytes, taken before the socket reads any (it is paused), with the netns
 * it passed along (SCM_RIGHTS): its identity, the descriptor itself closed at once. Or why
 * the caller is refused.
 */
export type FirstBytes = (connection: Socket, withinMs: number) => Promise<{ bytes: Buffer; netns?: NetnsId } | { refused: string }>;

/** What the agent asks of the kernel about each caller. */
export interface CallerChecks {
  admit: PeerCheck;
  firstBytes: FirstBytes;
}

/** Bun's and Node's unix sockets both keep their descriptor here. */
const socketFd = (connection: Socket) => (connection as unknown as { _handle?: { fd?: unknown } })._handle?.fd;

/**
 * The plugin asks once it has checked who listens (~0.3 ms after it connected), so the first
 * look usually finds nothing. A timer's first turn takes ~1.2 ms in Bun: the second look
 * waits in the kernel instead, up to this, for the question. The event loop stands still
 * for it; a loop spinning to look took a core from that very plugin (2 cores here).
 */
const promptMs = 1;
/** The event loop's time blocking waits may take, per second: callers flooding the socket get timers. */
const blockingPerSecondMs = 50;

/** Time spent in blocking waits, per second, up to a bound. */
export class BlockingBudget {
  private windowStart = Number.NEGATIVE_INFINITY;
  private spent = 0;

  constructor(
    private readonly perSecondMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Runs `wait` when this second's budget has room, its time counted; false (and not run) when it has none. */
  spend(wait: () => void): boolean {
    const started = this.now();
    if (started - this.windowStart >= 1000) [this.windowStart, this.spent] = [started, 0];
    if (this.spent >= this.perSecondMs) return false;
    wait();
    this.spent += this.now() - started;
    return true;
  }
}

/**
 * Only root may ask (the plugin runs as root: the runtime execs it), by the kernel's word
 * for who connected (SO_PEERCRED), whatever the socket's file mode lets through: a mount of
 * its directory into another container, or a mode changed by hand. The netns a caller
 * passes is the only one the agent writes into for it.
 */
export async function kernelCallerChecks(): Promise<CallerChecks> {
  const { peerCredentials, receiveWithRights, waitReadable, close } = await libc();
  const blocking = new BlockingBudget(blockingPerSecondMs);
  const admit: PeerCheck = (connection) => {
    const fd = socketFd(connection);
    if (typeof fd !== "number" || fd < 0) return { reason: "its descriptor is unknown, so its credentials are" };
    try {
      const { uid, pid } = peerCredentials(fd);
      // The pid apart from the reason: a caller connecting again and again is said once, not once per process.
      return uid === 0 ? undefined : { reason: `uid ${uid} is not root`, ...(pid ? { pid } : {}) };
    } catch (error) {
      return { reason: `its credentials cannot be read: ${errorMessage(error)}` };
    }
  };
  // One buffer for every caller: each receive is copied out of it before anything else runs.
  const buffer = new Uint8Array(maxAskBytes);
  const firstBytes: FirstBytes = async (connection, withinMs) => {
    const fd = socketFd(connection) as number;
    const until = performance.now() + withinMs;
    for (let wait = 0; !connection.destroyed; wait = Math.min(2 * wait || 1, 16)) {
      const received = receiveWithRights(fd, buffer, false);
      if (received) {
        try {
          if (received.passed.length > 1) return { refused: `${received.passed.length} descriptors passed, not one netns` };
          const netns = received.passed.map((passed) => fstatSync(passed)).find((stat) => stat.isFile() && stat.size === 0);
          if (received.passed.length > 0 && !netns) return { refused: "a descriptor passed that is no namespace" };
          return {
            bytes: Buffer.from(buffer.subarray(0, received.bytes)),
            ...(netns ? { netns: { dev: netns.dev, ino: netns.ino } } : {}),
          };
        } finally {
          for (const passed of received.passed) close(passed);
        }
      }
      if (performance.now() > until) return { refused: `nothing asked within ${withinMs} ms` };
      if (wait === 0 && blocking.spend(() => waitReadable(fd, promptMs))) continue;
      await sleep(wait);
    }
    return { refused: "it closed the connection" };
  };
  return { admit, firstBytes };
}
