import { EAGAIN, EINTR, EINVAL, ENAMETOOLONG, SyscallError } from "./syscall-error.js";

/**
 * Every call meshcni makes into libc, through bun:ffi (which Bun documents as
 * experimental): entering a network namespace, talking netlink, and passing a netns's
 * descriptor over the agent's socket. Each wrapper reads errno right after its call and
 * throws a SyscallError on failure, so no caller sees a raw return code. Loaded on first
 * use: only the verbs that touch a netns pay for it.
 */

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
  /** A stream socket connected to the unix socket at `path`, each send and receive bounded by `timeoutMs` (EAGAIN past it). */
  connectUnix(path: string, timeoutMs: number): number;
  /** Sends the whole buffer on a stream socket, `passed` descriptors with its first byte (SCM_RIGHTS). */
  sendWithRights(fd: number, data: Uint8Array, passed: number[]): void;
  /**
   * Receives what is there on a stream socket, with the descriptors sent along (installed
   * close-on-exec); waits up to the socket's timeout when `wait`. Undefined when nothing came
   * (EAGAIN); 0 bytes: the peer closed.
   */
  receiveWithRights(fd: number, buffer: Uint8Array, wait: boolean): { bytes: number; passed: number[] } | undefined;
  /** Waits up to `timeoutMs` (whole ms) for `fd` to have something to read, or its peer to close: true if it has (poll(2)). */
  waitReadable(fd: number, timeoutMs: number): boolean;
}

/** socket(2)'s arguments for a netlink socket to the kernel: AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC. */
export const [AF_NETLINK, SOCK_RAW_CLOEXEC] = [16, 3 | 0x80000];

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
    connect: { args: [FFIType.i32, FFIType.ptr, FFIType.u32], returns: FFIType.i32 },
    sendmsg: { args: [FFIType.i32, FFIType.ptr, FFIType.i32], returns: FFIType.i64_fast },
    recvmsg: { args: [FFIType.i32, FFIType.ptr, FFIType.i32], returns: FFIType.i64_fast },
    poll: { args: [FFIType.ptr, FFIType.u64, FFIType.i32], returns: FFIType.i32 },
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
  kernel[0] = AF_NETLINK;
  const MSG_DONTWAIT = 0x40;
  const [LOCK_EX, LOCK_NB] = [2, 4];
  const [SOL_SOCKET, SO_PEERCRED, SO_RCVTIMEO, SO_SNDTIMEO, SCM_RIGHTS] = [1, 17, 20, 21, 1];
  const [MSG_NOSIGNAL, MSG_CMSG_CLOEXEC] = [0x4000, 0x40000000];
  /** Retries a call interrupted by a signal; -1 with any other errno throws. */
  const retried = (call: string, attempt: () => number | bigint): number => {
    for (;;) {
      const value = Number(attempt());
      if (value >= 0) return value;
      const code = errno();
      if (code !== EINTR) throw new SyscallError(call, code);
    }
  };
  /** A receive's bytes, or undefined when there was nothing to receive (EAGAIN: none waiting, or the timeout passed). */
  const unlessNothing = (receive: () => number): number | undefined => {
    try {
      return receive();
    } catch (error) {
      if (error instanceof SyscallError && error.errno === EAGAIN) return undefined;
      throw error;
    }
  };
  /**
   * struct msghdr (x86-64 and arm64: 56 bytes) over one iovec, with room for `control` (a
   * cmsghdr of 16 bytes, then its descriptors).
   */
  const message = (data: Uint8Array, control: Uint8Array) => {
    const iov = new BigUint64Array([BigInt(ptr(data)), BigInt(data.byteLength)]);
    const header = new BigUint64Array(7);
    header[2] = BigInt(ptr(iov));
    header[3] = 1n;
    if (control.byteLength > 0) {
      header[4] = BigInt(ptr(control));
      header[5] = BigInt(control.byteLength);
    }
    return { header, iov };
  };
  loaded = {
    setns: (fd, nstype) => void checked("setns", symbols.setns(fd, nstype)),
    socket: (domain, type, protocol) => checked("socket", symbols.socket(domain, type, protocol)),
    setsockoptInt(fd, level, name, value) {
      const option = new Int32Array([value]);
      checked("setsockopt", symbols.setsockopt(fd, level, name, ptr(option), 4));
    },
    sendToKernel: (fd, data) => retried("sendto", () => symbols.sendto(fd, ptr(data), data.byteLength, 0, ptr(kernel), kernel.byteLength)),
    receive: (fd, buffer) => unlessNothing(() => retried("recv", () => symbols.recv(fd, ptr(buffer), buffer.byteLength, MSG_DONTWAIT))),
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
    connectUnix(path, timeoutMs) {
      // struct sockaddr_un: AF_UNIX, then the path, NUL-terminated within 108 bytes.
      const name = Buffer.from(path);
      if (name.byteLength > 107) throw new SyscallError("connect", ENAMETOOLONG);
      const address = new Uint8Array(110);
      address[0] = 1;
      address.set(name, 2);
      const fd = checked("socket", symbols.socket(1, 1 | 0x80000, 0));
      try {
        const timeval = new BigInt64Array([BigInt(Math.floor(timeoutMs / 1000)), BigInt((timeoutMs % 1000) * 1000)]);
        for (const option of [SO_RCVTIMEO, SO_SNDTIMEO])
          checked("setsockopt", symbols.setsockopt(fd, SOL_SOCKET, option, ptr(timeval), 16));
        retried("connect", () => symbols.connect(fd, ptr(address), address.byteLength));
        return fd;
      } catch (error) {
        symbols.close(fd);
        throw error;
      }
    },
    sendWithRights(fd, data, passed) {
      const control = new Uint8Array(passed.length > 0 ? 16 + 8 * Math.ceil(passed.length / 2) : 0);
      if (passed.length > 0) {
        const view = new DataView(control.buffer);
        view.setBigUint64(0, BigInt(16 + 4 * passed.length), true);
        view.setInt32(8, SOL_SOCKET, true);
        view.setInt32(12, SCM_RIGHTS, true);
        for (const [index, passedFd] of passed.entries()) view.setInt32(16 + 4 * index, passedFd, true);
      }
      // The descriptors go with the first send; a short send's rest follows without them.
      const { header } = message(data, control);
      let sent = retried("sendmsg", () => symbols.sendmsg(fd, ptr(header), MSG_NOSIGNAL));
      while (sent < data.byteLength) {
        const rest = data.subarray(sent);
        const { header: more } = message(rest, new Uint8Array(0));
        sent += retried("sendmsg", () => symbols.sendmsg(fd, ptr(more), MSG_NOSIGNAL));
      }
    },
    receiveWithRights(fd, buffer, wait) {
      const control = new Uint8Array(64);
      const { header } = message(buffer, control);
      const received = unlessNothing(() =>
        retried("recvmsg", () => symbols.recvmsg(fd, ptr(header), MSG_CMSG_CLOEXEC | (wait ? 0 : MSG_DONTWAIT))),
      );
      if (received === undefined) return undefined;
      const passed: number[] = [];
      const view = new DataView(control.buffer);
      // Each cmsghdr: its length (with the header), level, type, then data; 8-byte aligned.
      for (let at = 0; at + 16 <= Number(header[5]); ) {
        const length = Number(view.getBigUint64(at, true));
        if (length < 16) break;
        if (view.getInt32(at + 8, true) === SOL_SOCKET && view.getInt32(at + 12, true) === SCM_RIGHTS)
          for (let offset = at + 16; offset + 4 <= at + length; offset += 4) passed.push(view.getInt32(offset, true));
        at += Math.ceil(length / 8) * 8;
      }
      return { bytes: received, passed };
    },
    waitReadable(fd, timeoutMs) {
      // struct pollfd: fd, events (POLLIN), revents; POLLIN, POLLERR or POLLHUP back means a read will not wait.
      const pollfd = new Int32Array([fd, 1]);
      retried("poll", () => symbols.poll(ptr(pollfd), 1, timeoutMs));
      return pollfd[1]! >>> 16 !== 0;
    },
  };
  return loaded;
}
