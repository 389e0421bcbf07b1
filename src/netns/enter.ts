import { closeSync, constants, fstatSync, statSync } from "node:fs";
import { errnoCode } from "../errors.js";
import { fileKind, openNonBlocking } from "../file-open.js";
import { libc } from "../libc.js";
import { EINVAL, SyscallError } from "../syscall-error.js";

const CLONE_NEWNET = 0x40000000;

/** The netns is gone (or was never there): DEL and the audit take this as done. */
export class NetnsGoneError extends Error {
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(`network namespace ${path} is not available: ${reason}`);
    this.name = "NetnsGoneError";
  }
}

/** CNI_NETNS names meshcni's own network namespace (the host's): a redirect there would take the node's TCP. */
export class OwnNetnsError extends Error {
  constructor(readonly path: string) {
    super(`refusing network namespace ${path}: it is meshcni's own (the host's), not a pod's`);
    this.name = "OwnNetnsError";
  }
}

/**
 * The netns a path names here is not the one the plugin opened (another mount namespace's
 * view: the agent's container without the host's netns mounts, a /proc path of another PID
 * namespace). Not "gone": whoever asked must act on it itself.
 */
export class NetnsNotSeenError extends Error {
  constructor(
    readonly path: string,
    reason: string,
  ) {
    super(`network namespace ${path} is not the one the plugin opened: ${reason}`);
    this.name = "NetnsNotSeenError";
  }
}

/** A namespace file's identity (nsfs: one device, the namespace's inode), the same in every mount namespace. */
export interface NetnsId {
  dev: number;
  ino: number;
}

/** setns(2) failed for another reason than the netns being gone. */
export class NetnsError extends Error {
  constructor(
    readonly path: string,
    readonly errno: number,
    what: string,
  ) {
    super(`${what} (errno ${errno})`);
    this.name = "NetnsError";
  }
}

/**
 * Opens a pod's netns: without blocking (a fifo there must not hang the plugin), only a
 * namespace file (setns then tells a network namespace from another kind), and never the
 * namespace this thread is in; when `expected`, only that very namespace.
 */
function openPodNamespace(path: string, expected?: NetnsId): { fd: number; id: NetnsId } {
  let fd: number;
  try {
    fd = openNonBlocking(path, constants.O_RDONLY);
  } catch (error) {
    const reason = errnoCode(error) ?? String(error);
    throw expected ? new NetnsNotSeenError(path, reason) : new NetnsGoneError(path, reason);
  }
  try {
    const target = fstatSync(fd);
    if (!target.isFile() || target.size !== 0) {
      const reason = `not a network namespace (${fileKind(target)})`;
      // The plugin opened one there: this view of the path is not its.
      throw expected ? new NetnsNotSeenError(path, reason) : new NetnsGoneError(path, reason);
    }
    const own = statSync("/proc/thread-self/ns/net");
    if (target.dev === own.dev && target.ino === own.ino) throw new OwnNetnsError(path);
    // Never the identity found: a caller that asserted a wrong one must not learn the right one from the answer.
    if (expected && (target.dev !== expected.dev || target.ino !== expected.ino))
      throw new NetnsNotSeenError(path, "another namespace is there");
    return { fd, id: { dev: target.dev, ino: target.ino } };
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

/** Checks that `path` names a network namespace that is not this process's own, without entering it; its identity. */
export function checkPodNetns(path: string): NetnsId {
  const { fd, id } = openPodNetns(path);
  closeSync(fd);
  return id;
}

/** The pod's netns at `path`, opened (the caller closes it), checked as checkPodNetns checks it. */
export function openPodNetns(path: string): { fd: number; id: NetnsId } {
  return openPodNamespace(path);
}

/**
 * Runs `action` with this thread in the network namespace at `path`, then returns to
 * the original one. Only the calling thread moves, and child processes are spawned
 * from it, so iptables-restore runs inside the pod netns. Nothing else may do network
 * I/O meanwhile: API calls happen before entering. With `expected`, a path that does not
 * name that namespace here is NetnsNotSeenError.
 */
export async function inNetns<T>(path: string, action: () => Promise<T>, expected?: NetnsId): Promise<T> {
  const { setns } = await libc();
  const { fd: target } = openPodNamespace(path, expected);
  const home = openNonBlocking("/proc/thread-self/ns/net", constants.O_RDONLY);
  try {
    try {
      setns(target, CLONE_NEWNET);
    } catch (error) {
      // EINVAL: the path is no netns any more (its bind mount went away).
      if (error instanceof SyscallError && error.errno === EINVAL) throw new NetnsGoneError(path, "not a network namespace");
      throw new NetnsError(path, (error as SyscallError).errno, `setns(${path}) failed`);
    }
    const outcome = await action().then(
      (value) => ({ ok: true as const, value }),
      (error: unknown) => ({ ok: false as const, error }),
    );
    // Staying in the pod netns would aim any later I/O wrongly; the process is short-lived.
    try {
      setns(home, CLONE_NEWNET);
    } catch (error) {
      throw new NetnsError(path, (error as SyscallError).errno, "could not return to the host network namespace");
    }
    if (!outcome.ok) throw outcome.error;
    return outcome.value;
  } finally {
    closeSync(target);
    closeSync(home);
  }
}
