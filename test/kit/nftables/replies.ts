import type { Libc } from "../../../src/libc.js";
import { NLMSG_ERROR } from "../../../src/nftables/netlink.js";

/** An error (or, with errno 0, an ack) answering request `seq`, capped as with NETLINK_CAP_ACK. */
export function errorReply(seq: number, errno: number): Uint8Array {
  const message = new Uint8Array(36);
  const view = new DataView(message.buffer);
  view.setUint32(0, 36, true);
  view.setUint16(4, NLMSG_ERROR, true);
  view.setUint16(6, 0x100, true);
  view.setUint32(8, seq, true);
  view.setInt32(16, -errno, true);
  view.setUint32(16 + 4, 16, true);
  view.setUint32(16 + 12, seq, true);
  return message;
}

/** The unix-socket calls of libc, which no netlink test makes. */
export const noUnixSockets: Pick<Libc, "connectUnix" | "sendWithRights" | "receiveWithRights" | "waitReadable"> = {
  connectUnix: () => {
    throw new Error("the fake kernel has no unix sockets");
  },
  sendWithRights: () => {
    throw new Error("the fake kernel has no unix sockets");
  },
  receiveWithRights: () => {
    throw new Error("the fake kernel has no unix sockets");
  },
  waitReadable: () => {
    throw new Error("the fake kernel has no unix sockets");
  },
};
