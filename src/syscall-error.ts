/** What a failed libc call says: its errno, by number and, when known, by name. Loads nothing. */

/** A libc call that failed: which one, and errno (its number and, when known, its name). */
export class SyscallError extends Error {
  constructor(
    readonly call: string,
    readonly errno: number,
  ) {
    super(`${call} failed: ${errnoNames[errno] ?? "errno"} (${errno})`);
    this.name = "SyscallError";
  }

  get code(): string | undefined {
    return errnoNames[this.errno];
  }
}

/** The errno values meshcni tells apart or reports (Linux, every architecture it ships for). */
export const errnoNames: Record<number, string> = {
  1: "EPERM",
  2: "ENOENT",
  4: "EINTR",
  9: "EBADF",
  11: "EAGAIN",
  12: "ENOMEM",
  13: "EACCES",
  16: "EBUSY",
  17: "EEXIST",
  19: "ENODEV",
  22: "EINVAL",
  24: "EMFILE",
  27: "EFBIG",
  28: "ENOSPC",
  34: "ERANGE",
  36: "ENAMETOOLONG",
  71: "EPROTO",
  85: "ERESTART",
  90: "EMSGSIZE",
  93: "EPROTONOSUPPORT",
  95: "EOPNOTSUPP",
  97: "EAFNOSUPPORT",
  105: "ENOBUFS",
  111: "ECONNREFUSED",
};

export const EINVAL = 22;
export const [ENOENT, EINTR, EAGAIN, ENAMETOOLONG, EPROTONOSUPPORT] = [2, 4, 11, 36, 93];
