import { createHash, randomBytes } from "node:crypto";
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";

export function sha256(content: string | Buffer): string {
  return createHash("sha256").update(content).digest("hex");
}

/**
 * Writes through a temp file in the same directory and a rename, so a reader (the
 * runtime, a watcher) sees the old file or the new one, never half of either; the rename
 * is what containerd's watcher reacts to. The temp name does not end in .conf/.conflist.
 */
export function writeAtomic(path: string, content: string | Buffer, mode = 0o644): void {
  const temp = join(dirname(path), `.${basename(path)}.meshcni-${randomBytes(4).toString("hex")}.tmp`);
  const fd = openSync(temp, "w", mode);
  try {
    writeFileSync(fd, content);
    fsyncSync(fd);
  } catch (error) {
    closeSync(fd);
    rmSync(temp, { force: true });
    throw error;
  }
  closeSync(fd);
  try {
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}
