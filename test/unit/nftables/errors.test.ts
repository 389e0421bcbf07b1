import { describe, expect, it } from "vitest";
import type { Libc } from "../../../src/libc.js";
import { ruleExprs } from "../../../src/nftables/from-plan.js";
import { NLMSG_ERROR, parseError, parseMessages } from "../../../src/nftables/netlink.js";
import { newRule } from "../../../src/nftables/rule.js";
import { tableContents } from "../../../src/nftables/ruleset.js";
import { attributePath, NftablesError, NftSocket } from "../../../src/nftables/socket.js";
import { newTable } from "../../../src/nftables/table.js";
import { errorReply, noUnixSockets } from "../../kit/nftables/replies.js";
import recorded from "./golden.json" with { type: "json" };

const bytes = (hex: string) => Uint8Array.from(Buffer.from(hex, "hex"));

/** A recorded message as it was on the wire: its header rebuilt around the recorded body. */
function wire({ type, flags, body }: { type: number; flags: number; body: string }, seq: number): Uint8Array {
  const payload = bytes(body);
  const message = new Uint8Array(16 + payload.byteLength);
  const view = new DataView(message.buffer);
  view.setUint32(0, message.byteLength, true);
  view.setUint16(4, type, true);
  view.setUint16(6, flags, true);
  view.setUint32(8, seq, true);
  message.set(payload, 16);
  return message;
}

describe("the kernel's refusals", () => {
  const error = recorded.refused.received.find((message) => message.type === NLMSG_ERROR)!;
  const answer = parseError({ type: error.type, flags: error.flags, seq: 0, payload: bytes(error.body) });

  it("reads errno, the request it answers and the extended ack (the kernel's own bytes, a whole request echoed)", () => {
    expect(answer.errno).toBe(2);
    // nft's rule was the third message of its batch (sequence numbers from 1).
    expect(answer.seq).toBe(3);
    expect(answer.offset).toBeGreaterThan(20);
  });

  it("names the attribute the kernel points at: the jump's chain in the rule's immediate expression", () => {
    const rule = recorded.refused.sent.find((message) => (message.type & 0xff) === 6)!;
    const ruleAttributes = newRule("ipv4", "meshcni", { chain: "c", exprs: [], comment: undefined }).attributes;
    expect(attributePath(wire(rule, 3), answer.offset!, ruleAttributes)).toBe("at expressions > #1 (immediate)");
  });

  it("fails a commit on the kernel's refusal, naming the message (the rule, by its chain), the errno and the attribute", async () => {
    // The rule nft's was: a jump to no chain. A kernel that acks the table and chain and refuses the rule as it refused nft's.
    const rule = { chain: "c", ...ruleExprs(["-j", "nochain"], "ipv4", [], () => 0) };
    const parts = [
      newTable("ipv4", "meshcni", false),
      ...tableContents({ family: "ipv4", name: "meshcni", chains: [{ name: "c" }], sets: [], rules: [rule] }),
    ];
    const replies: Uint8Array[] = [];
    const kernel: Libc = {
      ...noUnixSockets,
      tryLock: () => true,
      peerCredentials: () => ({ pid: 1, uid: 0, gid: 0 }),
      setns: () => undefined,
      socket: () => 3,
      setsockoptInt: () => undefined,
      sendToKernel(_fd, batch) {
        for (const request of parseMessages(batch).filter((message) => message.type >> 8 === 10)) {
          const refused = (request.type & 0xff) === 6;
          const reply = refused ? wire(error, request.seq) : errorReply(request.seq, 0);
          // The echoed request's sequence number is the one answered.
          new DataView(reply.buffer).setUint32(16 + 12, request.seq, true);
          replies.push(reply);
        }
        return batch.byteLength;
      },
      receive(_fd, buffer) {
        const next = replies.shift();
        if (!next) return undefined;
        buffer.set(next);
        return next.byteLength;
      },
      close: () => undefined,
    };
    const socket = await NftSocket.open(kernel);
    expect(() => socket.commit(parts)).toThrow(new NftablesError("add rule to c", 2, "at expressions > #1 (immediate)"));
    expect(() => socket.commit(parts)).toThrow("nftables: add rule to c failed: ENOENT (2): at expressions > #1 (immediate)");
  });
});
