import {
  chmodSync,
  closeSync,
  constants,
  copyFileSync,
  fstatSync,
  fsyncSync,
  lstatSync,
  openSync,
  readdirSync,
  readlinkSync,
  readSync,
  renameSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { errnoCode } from "./errors.js";
import { openNonBlocking } from "./file-open.js";

/**
 * node:crypto is loaded only when a hash is needed (a container ID that cannot be a file
 * name): importing it costs every process ~1.6 ms at start, a pod start included.
 */
export function sha256(content: string | Buffer): string {
  const { createHash } = process.getBuiltinModule("node:crypto");
  return createHash("sha256").update(content).digest("hex");
}

/** Random hex from Web Crypto (a global, so node:crypto stays unloaded). */
const randomHex = (bytes: number) => Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString("hex");

/** Removes a file; one already gone is fine. Unlike Bun's rmSync it reports the real errno (EPERM, not EFAULT). */
export function removeFile(path: string): void {
  try {
    unlinkSync(path);
  } catch (error) {
    if (errnoCode(error) !== "ENOENT") throw error;
  }
}

/**
 * The PID namespace this process is in (the inode /proc/self/ns/pid names): a PID means
 * something only there. The agent has no hostPID, so the host plugin's PIDs mean nothing
 * to its sweeps.
 */
let pidNamespace: string | undefined;
function ownPidNamespace(): string {
  if (pidNamespace === undefined) {
    try {
      pidNamespace = /\[(\d+)\]/.exec(readlinkSync("/proc/self/ns/pid"))?.[1] ?? "";
    } catch {
      pidNamespace = "";
    }
  }
  return pidNamespace;
}

/** Temp and lock files carry their writer's PID namespace and PID, so a sweep can tell an abandoned one from one in use. */
const writerTag = () => `meshcni-ns${ownPidNamespace()}-${process.pid}-${randomHex(4)}`;
const tempName = (path: string) => join(dirname(path), `.${basename(path)}.${writerTag()}.tmp`);
/** Also an older meshcni's names, without the namespace. */
const tempPattern = /\.meshcni-(?:ns(\d*)-)?(\d+)-[0-9a-f]+\.(tmp|lock)$/;

/**
 * Makes `path` hold new content through a temp file in the same directory and a rename,
 * so a reader (the runtime, a watcher) sees the old file or the new one, never half of
 * either; the rename is what containerd's watcher reacts to. The temp name does not end
 * in .conf/.conflist. `fill` writes the temp file.
 */
function replaceAtomically(path: string, mode: number, fill: (temp: string, fd: number) => void, durable = true): void {
  const temp = tempName(path);
  const fd = openSync(temp, "wx", mode);
  try {
    fill(temp, fd);
    if (durable) fsyncSync(fd);
  } catch (error) {
    closeSync(fd);
    removeFile(temp);
    throw error;
  }
  closeSync(fd);
  try {
    renameSync(temp, path);
  } catch (error) {
    removeFile(temp);
    throw error;
  }
}

/**
 * `durable: false` skips the fsync: for files whose loss in a crash loses nothing (the
 * plugin's records, on a tmpfs that a reboot empties with the netns they describe).
 */
export function writeAtomic(path: string, content: string | Buffer, mode = 0o644, options: { durable?: boolean } = {}): void {
  replaceAtomically(path, mode, (_temp, fd) => writeFileSync(fd, content), options.durable ?? true);
}

/** Copies a file atomically, in the kernel (copy_file_range): a large binary is never held in memory. */
export function copyAtomic(source: string, path: string, mode: number): void {
  replaceAtomically(path, mode, (temp) => {
    copyFileSync(source, temp);
    chmodSync(temp, mode);
  });
}

/**
 * Whether two regular files hold the same bytes, read a chunk at a time. Either being
 * anything else (a fifo put where the binary goes: opened without blocking) is no match,
 * so the caller replaces it.
 */
export function sameContent(a: string, b: string, chunkBytes = 1 << 20): boolean {
  const fa = openNonBlocking(a, constants.O_RDONLY);
  try {
    const fb = openNonBlocking(b, constants.O_RDONLY);
    try {
      const [sa, sb] = [fstatSync(fa), fstatSync(fb)];
      if (!sa.isFile() || !sb.isFile() || sa.size !== sb.size) return false;
      const [ba, bb] = [Buffer.alloc(chunkBytes), Buffer.alloc(chunkBytes)];
      for (;;) {
        const read = readSync(fa, ba, 0, chunkBytes, null);
        if (read === 0) return true;
        if (readSync(fb, bb, 0, chunkBytes, null) !== read || !ba.subarray(0, read).equals(bb.subarray(0, read))) return false;
      }
    } finally {
      closeSync(fb);
    }
  } finally {
    closeSync(fa);
  }
}

/** A per-process file name in `dir` that sweepAbandoned recognises: `<prefix>.meshcni-ns<pidns>-<pid>-<random>.lock`. */
export function processFileName(dir: string, prefix: string): string {
  return join(dir, `${prefix}.${writerTag()}.lock`);
}

/**
 * Past this age a temp or lock file whose writer this process cannot see is abandoned: far
 * above the longest plugin invocation (the API's deadline, at most 300 s, and 15 s more).
 */
export const abandonedAfterMs = 10 * 60_000;

/** What a sweep knows of its own process: its PID namespace, its PID, and whether a PID there is alive. */
export interface Sweeper {
  pidNamespace: string;
  pid: number;
  isAlive(pid: number): boolean;
}

/**
 * Whether a temp or lock file is abandoned, pure. Written in this PID namespace: when its
 * writer is gone (killed mid-write, say). Written elsewhere (the host's plugin, seen from
 * the agent's container) or by an older meshcni: only once older than abandonedAfterMs,
 * never by a PID check that means nothing here.
 */
export function isAbandoned(name: string, modifiedMs: number, nowMs: number, sweeper: Sweeper): boolean {
  const match = tempPattern.exec(name);
  if (!match) return false;
  const [, namespace, pid] = match;
  if (namespace && namespace === sweeper.pidNamespace) return Number(pid) !== sweeper.pid && !sweeper.isAlive(Number(pid));
  return nowMs - modifiedMs > abandonedAfterMs;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return errnoCode(error) === "EPERM";
  }
}

/** Removes the temp and lock files in `dir` that are abandoned (see isAbandoned); returns their names. A missing dir holds nothing. */
export function sweepAbandoned(dir: string, nowMs = Date.now()): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const sweeper = { pidNamespace: ownPidNamespace(), pid: process.pid, isAlive };
  const abandoned = names.filter((name) => {
    if (!tempPattern.test(name)) return false;
    try {
      return isAbandoned(name, lstatSync(join(dir, name)).mtimeMs, nowMs, sweeper);
    } catch {
      return false;
    }
  });
  for (const name of abandoned) removeFile(join(dir, name));
  return abandoned;
}
