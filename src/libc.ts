/**
 * Every call meshcni makes into libc, through bun:ffi (which Bun documents as
 * experimental): entering a network namespace and talking netlink. Each wrapper reads
 * errno right after its call and throws a SyscallError on failure, so no caller sees a
 * raw return code. Loaded on first use: only the verbs that touch a netns pay for it.
 */

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
  28: "ENOSPC",
  34: "ERANGE",
  71: "EPROTO",
  85: "ERESTART",
  90: "EMSGSIZE",
  93: "EPROTONOSUPPORT",
  95: "EOPNOTSUPP",
  97: "EAFNOSUPPORT",
  105: "ENOBUFS",
};

export const EINVAL = 22;
const EAGAIN = 11;
const EINTR = 4;

export interface Libc {
  setns(fd: number, nstype: number): void;
  socket(domain: number, type: number, protocol: number): number;
  setsockoptInt(fd: number, level: number, name: number, value: number): void;
  /** Sends the whole buffer to the kernel (netlink address 0); returns the bytes sent. */
  sendToKernel(fd: number, data: Uint8Array): number;
  /** Receives one datagram without blocking; undefined when there is none (EAGAIN). */
  receive(fd: number, buffer: Uint8Array): number | undefined;
  close(fd: number): void;
  /** Takes an exclusive flock(2) on `fd` without waiting: false while another open file holds it. */
  tryLock(fd: number): boolean;
  /** Who is at the other end of a unix socket (SO_PEERCRED): its pid (0 when outside this PID namespace), uid and gid. */
  peerCredentials(fd: number): { pid: number; uid: number; gid: number };
}

let loaded: Libc | undefined;

/** libc through bun:ffi; the compiled binary runs on Bun, so this fails only under Node (the unit tests). */
export async function libc(): Promise<Libc> {
  if (loaded) return loaded;
  if (!process.versions.bun) throw new Error("namespaces and netlink need the compiled meshcni binary (Bun's FFI)");
  const { dlopen, FFIType, ptr, read } = await import("bun:ffi");
  const { symbols } = dlopen("libc.so.6", {
    setns: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    socket: { args: [FFIType.i32, FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    setsockopt: { args: [FFIType.i32, FFIType.i32, FFIType.i32, FFIType.ptr, FFIType.u32], returns: FFIType.i32 },
    sendto: { args: [FFIType.i32, FFIType.ptr, FFIType.u64, FFIType.i32, FFIType.ptr, FFIType.u32], returns: FFIType.i64_fast },
    recv: { args: [FFIType.i32, FFIType.ptr, FFIType.u64, FFIType.i32], returns: FFIType.i64_fast },
    close: { args: [FFIType.i32], returns: FFIType.i32 },
    flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    getsockopt: { args: [FFIType.i32, FFIType.i32, FFIType.i32, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
    __errno_location: { args: [], returns: FFIType.ptr },
  });
  const errno = () => read.i32(symbols.__errno_location()!, 0);
  /** Checks a return value: -1 means failure, with errno set by this very call. */
  const checked = <T extends number | bigint>(call: string, value: T): T => {
    if (Number(value) < 0) throw new SyscallError(call, errno());
    return value;
  };
  // struct sockaddr_nl for the kernel: AF_NETLINK (16), pad, nl_pid 0, nl_groups 0.
  const kernel = new Uint8Array(12);
  kernel[0] = 16;
  const MSG_DONTWAIT = 0x40;
  const [LOCK_EX, LOCK_NB] = [2, 4];
  const [SOL_SOCKET, SO_PEERCRED] = [1, 17];
  loaded = {
    setns: (fd, nstype) => void checked("setns", symbols.setns(fd, nstype)),
    socket: (domain, type, protocol) => checked("socket", symbols.socket(domain, type, protocol)),
    setsockoptInt(fd, level, name, value) {
      const option = new Int32Array([value]);
      checked("setsockopt", symbols.setsockopt(fd, level, name, ptr(option), 4));
    },
    sendToKernel(fd, data) {
      for (;;) {
        const sent = Number(symbols.sendto(fd, ptr(data), data.byteLength, 0, ptr(kernel), kernel.byteLength));
        if (sent >= 0) return sent;
        const code = errno();
        if (code !== EINTR) throw new SyscallError("sendto", code);
      }
    },
    receive(fd, buffer) {
      for (;;) {
        const received = Number(symbols.recv(fd, ptr(buffer), buffer.byteLength, MSG_DONTWAIT));
        if (received >= 0) return received;
        const code = errno();
        if (code === EAGAIN) return undefined;
        if (code !== EINTR) throw new SyscallError("recv", code);
      }
    },
    close: (fd) => void checked("close", symbols.close(fd)),
    tryLock(fd) {
      for (;;) {
        if (symbols.flock(fd, LOCK_EX | LOCK_NB) === 0) return true;
        const code = errno();
        if (code === EAGAIN) return false;
        if (code !== EINTR) throw new SyscallError("flock", code);
      }
    },
    peerCredentials(fd) {
      // struct ucred: pid, uid, gid (32 bits each).
      const ucred = new Int32Array(3);
      const length = new Uint32Array([ucred.byteLength]);
      checked("getsockopt", symbols.getsockopt(fd, SOL_SOCKET, SO_PEERCRED, ptr(ucred), ptr(length)));
      if (length[0] !== ucred.byteLength) throw new SyscallError("getsockopt", EINVAL);
      return { pid: ucred[0]!, uid: ucred[1]! >>> 0, gid: ucred[2]! >>> 0 };
    },
  };
  return loaded;
}
