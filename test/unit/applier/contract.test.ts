import { describe, expect, it } from "vitest";
import { parseWriteRequest } from "../../../src/applier/contract.js";

const del = (netns: string, netnsId?: { dev: number; ino: number }) =>
  JSON.stringify({
    id: 1,
    verb: "DEL",
    hostRoot: "/host",
    target: { containerId: "c1", ifname: "eth0", netns },
    ...(netnsId ? { netnsId } : {}),
    netconf: "{}",
    proxyPorts: [4143, 4140],
  });

describe("the writer's contract", () => {
  it("takes a DEL naming a netns only with that netns's identity; without a netns, none is needed", () => {
    expect(() => parseWriteRequest(del("/var/run/netns/p"))).toThrow("a DEL naming a netns must carry its identity (netnsId)");
    expect(parseWriteRequest(del("/var/run/netns/p", { dev: 4, ino: 4026532999 }))).toMatchObject({ netnsId: { ino: 4026532999 } });
    expect(parseWriteRequest(del(""))).toMatchObject({ verb: "DEL", target: { netns: "" } });
  });
});
