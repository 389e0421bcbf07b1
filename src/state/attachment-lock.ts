import { closeSync, constants, existsSync, mkdirSync, openSync } from "node:fs";
import { join } from "node:path";
import { CniError, ErrorCode } from "../cni/errors.js";
import { sha256 } from "../files.js";
import { libc } from "../libc.js";

/**
 * Lock files shared by hash, never removed: a file per attachment would need removing, and
 * removing a lock file someone waits on hands out two locks. Two pods sharing one wait for
 * each other's write, which takes milliseconds.
 */
const slots = 64;
/** How often a held lock is tried again: a write takes milliseconds. */
const pollMs = 5;

/**
 * One writer of an attachment's rules and record at a time, across processes: the agent's
 * writer and a plugin that stopped waiting for it and writes itself. The plugin then waits
 * for the write in hand to end (and undo itself if it fails) before it writes; the lock is
 * the kernel's (flock), so a writer killed midway holds it no longer. Held past `waitMs`:
 * code 11, the runtime tries again. Returns what releases it.
 *
 * `createDir: false` (a DEL finding no record) takes no lock when locksDir is not there:
 * every writer makes it before it locks, so none holds one now, and a DEL after an
 * uninstall puts back nothing. A writer starting after this runs beside the DEL, as one
 * starting after the DEL's lock would run after it.
 */
export async function lockAttachment(locksDir: string, key: string, waitMs: number, createDir = true): Promise<() => void> {
  const { tryLock } = await libc();
  if (createDir) mkdirSync(locksDir, { recursive: true, mode: 0o700 });
  else if (!existsSync(locksDir)) return () => undefined;
  const slot = Number.parseInt(sha256(key).slice(0, 8), 16) % slots;
  const path = join(locksDir, `attachment-${slot}.lock`);
  const fd = openSync(path, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
  const release = () => closeSync(fd);
  try {
    for (const giveUpAt = performance.now() + waitMs; !tryLock(fd); ) {
      if (performance.now() >= giveUpAt)
        throw new CniError(ErrorCode.tryAgainLater, `another write of this attachment still holds ${path} after ${waitMs / 1000} s`);
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
  } catch (error) {
    release();
    throw error;
  }
  return release;
}
