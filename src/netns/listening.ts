import { readFileSync } from "node:fs";
import { AF_NETLINK, type Libc, libc, SOCK_RAW_CLOEXEC } from "../libc.js";
import { NLM_F_DUMP, NLM_F_REQUEST, NLMSG_DONE, NLMSG_ERROR, parseError, parseMessages } from "../nftables/netlink.js";
import { EAGAIN, ENOENT, EPROTONOSUPPORT, SyscallError } from "../syscall-error.js";

const AF_INET = 2;
const AF_INET6 = 10;
const NETLINK_SOCK_DIAG = 4;
const SOCK_DIAG_BY_FAMILY = 20;
const IPPROTO_TCP = 6;
const TCP_LISTEN = 10;

/**
 * sock_diag's dump request for the TCP sockets of `family` in LISTEN only (a netlink header,
 * then struct inet_diag_req_v2, the socket id all zeros). Asked for LISTEN alone, the kernel
 * walks its listening hash only; /proc/net/tcp walks the host-wide established hash too,
 * ~2.5 ms a read on this 24 GiB machine however empty the netns.
 */
export function listeningRequest(family: number, seq: number): Uint8Array {
  const bytes = new Uint8Array(72);
  const view = new DataView(bytes.buffer);
  view.setUint32(0, bytes.byteLength, true);
  view.setUint16(4, SOCK_DIAG_BY_FAMILY, true);
  view.setUint16(6, NLM_F_REQUEST | NLM_F_DUMP, true);
  view.setUint32(8, seq, true);
  bytes[16] = family;
  bytes[17] = IPPROTO_TCP;
  view.setUint32(20, 1 << TCP_LISTEN, true);
  return bytes;
}

/**
 * Adds the local ports of one dump datagram's sockets (struct inet_diag_msg: the source
 * port, big-endian, at byte 4) to `ports`; true once the dump is done. A refusal throws
 * (ENOENT: the kernel has no such family, as without IPv6).
 */
export function readListening(datagram: Uint8Array, ports: Set<number>): boolean {
  for (const message of parseMessages(datagram)) {
    if (message.type === NLMSG_DONE) return true;
    if (message.type === NLMSG_ERROR) {
      const { errno } = parseError(message);
      if (errno !== 0) throw new SyscallError("sock_diag", errno);
    } else if (message.type === SOCK_DIAG_BY_FAMILY && message.payload.byteLength >= 6)
      ports.add((message.payload[4]! << 8) | message.payload[5]!);
  }
  return false;
}

/** The local ports of the TCP sockets listening in a /proc/net/tcp or tcp6 table (state 0A). */
export function listeningPorts(table: string): Set<number> {
  const ports = new Set<number>();
  for (const line of table.split("\n").slice(1)) {
    const [, local, , state] = line.trim().split(/\s+/);
    if (state === "0A" && local) ports.add(Number.parseInt(local.slice(local.lastIndexOf(":") + 1), 16));
  }
  return ports;
}

/** sock_diag's answer for this thread's netns (its socket is opened here, so it sees this netns). */
function listeningByDiag(io: Libc): Set<number> {
  const ports = new Set<number>();
  const fd = io.socket(AF_NETLINK, SOCK_RAW_CLOEXEC, NETLINK_SOCK_DIAG);
  // The kernel makes no dump part larger than 32 KiB, whatever the reader's buffer.
  const buffer = new Uint8Array(32 << 10);
  try {
    for (const family of [AF_INET, AF_INET6]) {
      io.sendToKernel(fd, listeningRequest(family, family));
      try {
        // The kernel makes each part of a dump as the last is read: none is ever waited for.
        for (let done = false; !done; ) {
          const received = io.receive(fd, buffer);
          if (received === undefined) throw new SyscallError("sock_diag", EAGAIN);
          done = readListening(buffer.subarray(0, received), ports);
        }
      } catch (error) {
        if (!(error instanceof SyscallError && error.errno === ENOENT && family === AF_INET6)) throw error;
      }
    }
  } finally {
    io.close(fd);
  }
  return ports;
}

/** The /proc tables, where sock_diag cannot answer (a kernel without tcp_diag). */
function listeningByProc(): Set<number> {
  const ports = new Set<number>();
  for (const table of ["tcp", "tcp6"]) {
    let text = "";
    try {
      text = readFileSync(`/proc/thread-self/net/${table}`, "utf8");
    } catch {
      // No IPv6 in this kernel: no tcp6 table.
    }
    for (const port of listeningPorts(text)) ports.add(port);
  }
  return ports;
}

/** What a kernel without sock_diag for TCP says: no netlink family (EPROTONOSUPPORT), no handler (ENOENT). */
const noDiag = new Set([ENOENT, EPROTONOSUPPORT]);

/** The TCP ports something listens on in this thread's netns (enter it first: inNetns). */
export async function listeningHere(io?: Libc): Promise<Set<number>> {
  io ??= await libc();
  try {
    return listeningByDiag(io);
  } catch (error) {
    if (!(error instanceof SyscallError && noDiag.has(error.errno))) throw error;
    return listeningByProc();
  }
}
