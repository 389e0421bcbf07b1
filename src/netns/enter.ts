import { closeSync, openSync } from "node:fs";
import { errnoCode } from "../errors.js";

const CLONE_NEWNET = 0x40000000;
const EINVAL = 22;

interface Libc {
  setns(fd: number, nstype: number): number;
  errno(): number;
}

let libc: Libc | undefined;

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

/** setns(2) and errno through bun:ffi; the compiled binary runs on Bun. */
async function loadLibc(): Promise<Libc> {
  if (libc) return libc;
  if (!process.versions.bun) throw new Error("entering a network namespace needs the compiled meshcni binary (Bun's FFI)");
  const { dlopen, FFIType, read } = await import("bun:ffi");
  const { symbols } = dlopen("libc.so.6", {
    setns: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    __errno_location: { args: [], returns: FFIType.ptr },
  });
  libc = {
    setns: (fd, nstype) => symbols.setns(fd, nstype),
    errno: () => read.i32(symbols.__errno_location()!, 0),
  };
  return libc;
}

function openNamespace(path: string): number {
  try {
    return openSync(path, "r");
  } catch (error) {
    throw new NetnsGoneError(path, errnoCode(error) ?? String(error));
  }
}

/**
 * Runs `action` with this thread in the network namespace at `path`, then returns to
 * the original one. Only the calling thread moves, and child processes are spawned
 * from it, so iptables-restore runs inside the pod netns. Nothing else may do network
 * I/O meanwhile: API calls happen before entering.
 */
export async function inNetns<T>(path: string, action: () => Promise<T>): Promise<T> {
  const { setns, errno } = await loadLibc();
  const target = openNamespace(path);
  const home = openSync("/proc/thread-self/ns/net", "r");
  try {
    if (setns(target, CLONE_NEWNET) !== 0) {
      const code = errno();
      // EINVAL: the path is no netns any more (its bind mount went away).
      if (code === EINVAL) throw new NetnsGoneError(path, "not a network namespace");
      throw new NetnsError(path, code, `setns(${path}) failed`);
    }
    const outcome = await action().then(
      (value) => ({ ok: true as const, value }),
      (error: unknown) => ({ ok: false as const, error }),
    );
    // Staying in the pod netns would aim any later I/O wrongly; the process is short-lived.
    if (setns(home, CLONE_NEWNET) !== 0) throw new NetnsError(path, errno(), "could not return to the host network namespace");
    if (!outcome.ok) throw outcome.error;
    return outcome.value;
  } finally {
    closeSync(target);
    closeSync(home);
  }
}
