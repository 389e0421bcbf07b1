import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from "node:fs";

// Opening a path as what it claims to be: a fifo, a device or a directory named where a
// regular file is expected is refused, never opened in a way that blocks.

/** What a stat says a file is, for messages: "a fifo", "a directory"… */
export function fileKind(stat: Stats): string {
  if (stat.isFIFO()) return "a fifo";
  if (stat.isDirectory()) return "a directory";
  if (stat.isSocket()) return "a socket";
  if (stat.isCharacterDevice() || stat.isBlockDevice()) return "a device";
  return "a regular file";
}

/** A file that is not what the caller may read or write: never opened in a way that blocks. */
export class FileKindError extends Error {
  constructor(
    readonly path: string,
    readonly kind: string,
  ) {
    super(`${path} is ${kind}, not a regular file`);
    this.name = "FileKindError";
  }
}

/** Opens a path without ever blocking (a fifo opens at once) and without following a final symlink when asked. */
export function openNonBlocking(path: string, flags: number, mode?: number): number {
  return openSync(path, flags | constants.O_NONBLOCK, mode);
}

/** A regular file past what its reader takes. */
export class FileTooLargeError extends Error {
  constructor(
    readonly path: string,
    readonly maxBytes: number,
  ) {
    super(`${path} is larger than ${maxBytes} bytes`);
    this.name = "FileTooLargeError";
  }
}

/**
 * Reads a regular file, at most `maxBytes`: a fifo, device or directory named by a
 * config (a kubeconfig, a token) is refused rather than read, so no input can hang the
 * plugin on an open or a read.
 */
export function readRegularFile(path: string, maxBytes = 4 << 20): string {
  return readRegular(path, maxBytes).text;
}

/** readRegularFile, with what the open file's fstat said (its mode, its time). */
export function readRegular(path: string, maxBytes = 4 << 20): { text: string; stat: Stats } {
  const fd = openNonBlocking(path, constants.O_RDONLY);
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new FileKindError(path, fileKind(stat));
    if (stat.size > maxBytes) throw new FileTooLargeError(path, maxBytes);
    const buffer = Buffer.alloc(stat.size);
    let read = 0;
    while (read < stat.size) {
      const count = readSync(fd, buffer, read, stat.size - read, null);
      if (count === 0) break;
      read += count;
    }
    return { text: buffer.subarray(0, read).toString("utf8"), stat };
  } finally {
    closeSync(fd);
  }
}
