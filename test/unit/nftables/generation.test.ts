import { describe, expect, it } from "vitest";
import type { Libc } from "../../../src/libc.js";
import { decodeGeneration, generationRequest, rulesetGeneration } from "../../../src/nftables/generation.js";
import { encodeMessage, NLM_F_ACK, NLM_F_REQUEST, parseMessages } from "../../../src/nftables/netlink.js";
import { NftablesError, NftSocket } from "../../../src/nftables/socket.js";
import { errorReply, noUnixSockets } from "../../kit/nftables/fake-kernel.js";

/** NFT_MSG_NEWGEN as the kernel sends it: NFTA_GEN_ID (1) big-endian, NFTA_GEN_PROC_PID (2), NFTA_GEN_PROC_NAME (3). */
function newGen(seq: number, generation: number): Uint8Array {
  const id = new Uint8Array(4);
  new DataView(id.buffer).setUint32(0, generation, false);
  const pid = new Uint8Array(4);
  new DataView(pid.buffer).setUint32(0, 1234, false);
  return encodeMessage({
    type: (10 << 8) | 15,
    flags: 0,
    seq,
    family: 0,
    attrs: [
      { type: 1, value: id },
      { type: 2, value: pid },
      { type: 3, value: new TextEncoder().encode("nft\0") },
    ],
  });
}

/** A kernel answering each GETGEN with `answer(seq)` and an ack (the request asks one). */
function kernel(answer: (seq: number) => Uint8Array[]): { libc: Libc; asked: Uint8Array[] } {
  const replies: Uint8Array[] = [];
  const asked: Uint8Array[] = [];
  const libc: Libc = {
    ...noUnixSockets,
    tryLock: () => true,
    peerCredentials: () => ({ pid: 1, uid: 0, gid: 0 }),
    setns: () => undefined,
    socket: () => 3,
    setsockoptInt: () => undefined,
    sendToKernel(_fd, request) {
      asked.push(request.slice());
      for (const message of parseMessages(request)) replies.push(...answer(message.seq));
      return request.byteLength;
    },
    receive(_fd, buffer) {
      const next = replies.shift();
      if (!next) return undefined;
      buffer.set(next);
      return next.byteLength;
    },
    close: () => undefined,
  };
  return { libc, asked };
}

describe("the ruleset's generation (NFT_MSG_GETGEN)", () => {
  it("is asked of every family, not dumped, and acknowledged", async () => {
    const { libc, asked } = kernel((seq) => [newGen(seq, 7), errorReply(seq, 0)]);
    expect(await rulesetGeneration(() => NftSocket.open(libc))).toBe(7);
    const [request] = parseMessages(asked[0]!);
    expect(request).toMatchObject({ type: (10 << 8) | 16, flags: NLM_F_REQUEST | NLM_F_ACK });
    expect(request!.payload[0]).toBe(0);
  });

  it("reads NFTA_GEN_ID big-endian, whatever else the answer holds", () => {
    const [answer] = parseMessages(newGen(1, 0x01020304));
    expect(decodeGeneration(answer!)).toBe(0x01020304);
  });

  it("an answer without its id, or a refusal, is an error, never a generation", async () => {
    const [request] = parseMessages(generationRequest(1));
    expect(() => decodeGeneration(request!)).toThrow("no NFTA_GEN_ID");
    const refused = kernel((seq) => [errorReply(seq, 1)]);
    await expect(rulesetGeneration(() => NftSocket.open(refused.libc))).rejects.toThrow(NftablesError);
    const silent = kernel((seq) => [errorReply(seq, 0)]);
    await expect(rulesetGeneration(() => NftSocket.open(silent.libc))).rejects.toThrow("acknowledged it without an answer");
  });
});
