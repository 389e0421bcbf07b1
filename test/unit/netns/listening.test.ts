import { describe, expect, it } from "vitest";
import { listeningPorts } from "../../../src/netns/listening.js";

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
