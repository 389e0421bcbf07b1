import { describe, expect, it } from "vitest";
import { listeningPorts, listeningRequest, readListening } from "../../../src/netns/listening.js";

describe("the TCP ports listened on in a netns", () => {
  it("takes the local ports of listening sockets (state 0A) only, from tcp and tcp6 tables", () => {
    const tcp = [
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode",
      "   0: 00000000:102F 00000000:0000 0A 00000000:00000000 00:00000000 00000000  2102        0 1 1 0000000000000000 100 0 0 10 0",
      "   1: 0100007F:102C 00000000:0000 0A 00000000:00000000 00:00000000 00000000  2102        0 2 1 0000000000000000 100 0 0 10 0",
      // An established connection from port 4143 is no listener.
      "   2: 0200000A:1F90 0300000A:102F 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0000000000000000 20 4 30 10 -1",
    ].join("\n");
    const tcp6 = [
      "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode",
      "   0: 00000000000000000000000000000000:1F97 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  2102        0 4 1 0000000000000000 100 0 0 10 0",
    ].join("\n");
    expect([...listeningPorts(tcp)].sort()).toEqual([4140, 4143]);
    expect([...listeningPorts(tcp6)]).toEqual([8087]);
    expect([...listeningPorts("")]).toEqual([]);
  });
});

/** One sock_diag answer message: a netlink header of `type`, then `payload`. */
function diagMessage(type: number, payload: Uint8Array): Uint8Array {
  const bytes = new Uint8Array(16 + payload.byteLength);
  const view = new DataView(bytes.buffer);
  view.setUint32(0, bytes.byteLength, true);
  view.setUint16(4, type, true);
  bytes.set(payload, 16);
  return bytes;
}
/** struct inet_diag_msg (72 bytes) of a socket in `state` on local port `port`. */
function diagSocket(port: number, state = 10): Uint8Array {
  const payload = new Uint8Array(72);
  payload[0] = 2;
  payload[1] = state;
  payload[4] = port >> 8;
  payload[5] = port & 0xff;
  return diagMessage(20, payload);
}
const joined = (...parts: Uint8Array[]) => new Uint8Array(parts.flatMap((part) => [...part]));

describe("sock_diag's listening sockets", () => {
  it("asks for TCP sockets of the family in LISTEN only, as a dump", () => {
    const request = listeningRequest(10, 7);
    const view = new DataView(request.buffer);
    expect(request.byteLength).toBe(72);
    expect(view.getUint32(0, true)).toBe(72);
    expect(view.getUint16(4, true)).toBe(20);
    expect(view.getUint16(6, true)).toBe(0x301);
    expect(view.getUint32(8, true)).toBe(7);
    expect([request[16], request[17]]).toEqual([10, 6]);
    expect(view.getUint32(20, true)).toBe(1 << 10);
    expect(request.subarray(24).every((byte) => byte === 0)).toBe(true);
  });

  it("takes each socket's local port until the dump is done", () => {
    const ports = new Set<number>();
    expect(readListening(joined(diagSocket(4143), diagSocket(4140)), ports)).toBe(false);
    expect(readListening(joined(diagSocket(8087), diagMessage(3, new Uint8Array(4))), ports)).toBe(true);
    expect([...ports].sort()).toEqual([4140, 4143, 8087]);
  });

  it("throws the kernel's refusal with its errno", () => {
    const refusal = new Uint8Array(20);
    new DataView(refusal.buffer).setInt32(0, -2, true);
    expect(() => readListening(diagMessage(2, refusal), new Set())).toThrow(/ENOENT/);
  });
});
