import { AF_NETLINK, type Libc, libc, SOCK_RAW_CLOEXEC } from "../libc.js";
import { readLimitBytes } from "../redirect/table.js";
import { errnoNames, SyscallError } from "../syscall-error.js";
import type { BatchPart } from "./message.js";
import { encodeBatch, type NetlinkMessage, NLM_F_ACK, NLMSG_DONE, NLMSG_ERROR, parseAttrs, parseError, parseMessages } from "./netlink.js";

const NETLINK_NETFILTER = 12;
const SOL_NETLINK = 270;
const NETLINK_CAP_ACK = 10;
const NETLINK_EXT_ACK = 11;
/** Larger than any datagram the kernel sends (a dump part fills at most a page or two). */
const receiveBytes = 64 << 10;

/** The kernel refused an nf_tables request: which message, its errno, and what the kernel said of it. */
const EFBIG = 27;

export class NftablesError extends Error {
  constructor(
    readonly what: string,
    readonly errno: number,
    detail: string | undefined,
  ) {
    super(`nftables: ${what} failed: ${errnoNames[errno] ?? "errno"} (${errno})${detail ? `: ${detail}` : ""}`);
    this.name = "NftablesError";
  }
}

/**
 * Names the attribute at `offset` in a request (where the kernel's extended ack points):
 * from the message down, top-level attributes by `names`, list entries by position (an
 * expression with its name), nested ones by number.
 */
export function attributePath(request: Uint8Array, offset: number, names: Record<number, string>): string {
  const view = new DataView(request.buffer, request.byteOffset, request.byteLength);
  const path: string[] = [];
  let [start, end] = [20, request.byteLength];
  descend: for (;;) {
    for (let at = start, position = 1; at + 4 <= end; position++) {
      const length = view.getUint16(at, true);
      const rawType = view.getUint16(at + 2, true);
      if (length < 4) break descend;
      if (offset >= at && offset < at + length) {
        const nested = (rawType & 0x8000) !== 0;
        const inList = path.at(-1) === "expressions" || path.at(-1) === "elements";
        const name = nested ? parseAttrs(request.subarray(at + 4, at + length)).find((inner) => inner.type === 1) : undefined;
        const text = name ? new TextDecoder().decode(name.value) : "";
        const label = /^[a-z]+\0$/.test(text) ? ` (${text.slice(0, -1)})` : "";
        path.push(
          path.length === 0
            ? (names[rawType & 0x3fff] ?? String(rawType & 0x3fff))
            : inList
              ? `#${position}${label}`
              : String(rawType & 0x3fff),
        );
        if (!nested || offset === at) break descend;
        [start, end] = [at + 4, at + length];
        continue descend;
      }
      at += (length + 3) & ~3;
    }
    break;
  }
  return path.length > 0 ? `at ${path.join(" > ")}` : `at offset ${offset}`;
}

/**
 * A netlink socket to nf_tables, in the network namespace the calling thread was in when
 * it was opened (it stays bound to it). Requests never block: the kernel handles a batch
 * inside sendto and answers at once, and a dump's next part is made as the last is read.
 */
export class NftSocket {
  private seq = Math.floor(Date.now() / 1000) & 0xffffff;
  private readonly buffer = new Uint8Array(receiveBytes);

  private constructor(
    private readonly io: Libc,
    private readonly fd: number,
  ) {}

  /** Opens the socket; `io` is libc but for tests, which answer as the kernel would. */
  static async open(io?: Libc): Promise<NftSocket> {
    io ??= await libc();
    const fd = io.socket(AF_NETLINK, SOCK_RAW_CLOEXEC, NETLINK_NETFILTER);
    try {
      // Acks carry only the request's header; errors name the attribute that failed.
      io.setsockoptInt(fd, SOL_NETLINK, NETLINK_CAP_ACK, 1);
      io.setsockoptInt(fd, SOL_NETLINK, NETLINK_EXT_ACK, 1);
    } catch (error) {
      io.close(fd);
      throw error;
    }
    return new NftSocket(io, fd);
  }

  /** Every datagram waiting, as messages. */
  private drain(): NetlinkMessage[] {
    const messages: NetlinkMessage[] = [];
    for (;;) {
      const received = this.io.receive(this.fd, this.buffer);
      if (received === undefined) return messages;
      // Copied: the buffer is reused by the next receive.
      messages.push(...parseMessages(this.buffer.slice(0, received)));
    }
  }

  /**
   * Applies the parts as one batch, all or nothing, each acknowledged; throws an
   * NftablesError naming the first part the kernel refused and the attribute it points to.
   */
  commit(parts: BatchPart[]): void {
    const first = this.seq;
    this.seq += parts.length + 2;
    const messages = parts.map((part, index) => {
      const bytes = part.make(first + 1 + index);
      bytes[6]! |= NLM_F_ACK;
      return bytes;
    });
    this.io.sendToKernel(
      this.fd,
      encodeBatch(
        first,
        messages.map((bytes) => () => bytes),
      ),
    );
    const acked = new Set<number>();
    for (const reply of this.drain()) {
      if (reply.type !== NLMSG_ERROR) continue;
      const answer = parseError(reply);
      const index = answer.seq - first - 1;
      if (answer.errno === 0) acked.add(index);
      else {
        const part = parts[index];
        const where = answer.offset !== undefined && part ? attributePath(messages[index]!, answer.offset, part.attributes) : undefined;
        throw new NftablesError(
          part?.what ?? `batch message ${answer.seq}`,
          answer.errno,
          [answer.message, where].filter(Boolean).join(", ") || undefined,
        );
      }
    }
    if (acked.size !== parts.length)
      throw new NftablesError("batch", 71, `the kernel acknowledged ${acked.size} of ${parts.length} messages`);
  }

  /** One request answered by one message (not a dump, not a batch); an error reply throws. */
  ask(what: string, request: (seq: number) => Uint8Array): NetlinkMessage {
    const seq = this.seq++;
    const bytes = request(seq);
    bytes[6]! |= NLM_F_ACK;
    this.io.sendToKernel(this.fd, bytes);
    let answer: NetlinkMessage | undefined;
    for (const reply of this.drain()) {
      if (reply.seq !== seq) continue;
      if (reply.type !== NLMSG_ERROR) answer ??= reply;
      else {
        const error = parseError(reply);
        if (error.errno !== 0) throw new NftablesError(what, error.errno, error.message);
      }
    }
    if (!answer) throw new NftablesError(what, 71, "the kernel acknowledged it without an answer");
    return answer;
  }

  /**
   * Runs a dump to its end (NLMSG_DONE); an error reply throws, as does a dump past
   * readLimitBytes: a pod with NET_ADMIN fills its own netns as it likes, and what reads it
   * back (the audit, in the agent's cgroup) must stay bounded.
   */
  dump(what: string, request: (seq: number) => Uint8Array): NetlinkMessage[] {
    const seq = this.seq++;
    this.io.sendToKernel(this.fd, request(seq));
    const found: NetlinkMessage[] = [];
    let bytes = 0;
    for (;;) {
      const replies = this.drain();
      if (replies.length === 0) throw new NftablesError(what, 71, "the dump ended without its last message");
      for (const reply of replies) {
        if (reply.seq !== seq) continue;
        if (reply.type === NLMSG_DONE) return found;
        if (reply.type === NLMSG_ERROR) {
          const answer = parseError(reply);
          if (answer.errno !== 0) throw new NftablesError(what, answer.errno, answer.message);
        } else {
          found.push(reply);
          bytes += reply.payload.byteLength;
          if (bytes > readLimitBytes) throw new NftablesError(what, EFBIG, `more than ${readLimitBytes >> 20} MiB: not read further`);
        }
      }
    }
  }

  close(): void {
    try {
      this.io.close(this.fd);
    } catch (error) {
      // Closing is the last thing done; a failure leaves nothing to undo.
      if (!(error instanceof SyscallError)) throw error;
    }
  }
}
