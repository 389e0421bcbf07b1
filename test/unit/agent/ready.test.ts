import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { askReadyz, readyReport, readyzUrl } from "../../../src/agent/ready.js";
import type { Readiness } from "../../../src/installer/readiness.js";

const url = "http://127.0.0.1:9911/readyz";
const readyDisk: Readiness = { ready: true, reasons: [], cause: undefined, active: "10-calico.conflist", missingPlugins: [] };
const brokenDisk: Readiness = {
  ready: false,
  reasons: ["/etc/cni/net.d/10-calico.conflist chains portmap, with no executable in /opt/cni/bin: …"],
  cause: "ChainBroken",
  active: "10-calico.conflist",
  missingPlugins: ["portmap"],
};

describe("meshcni ready: the agent's verdict, explained from the disk", () => {
  it("says what /readyz says, whatever the disk shows from here", () => {
    expect(readyReport({ ready: true, cause: undefined }, readyDisk, url)).toEqual({
      ready: true,
      text: "ready: meshcni is chained in 10-calico.conflist",
    });
    expect(readyReport({ ready: true, cause: undefined }, brokenDisk, url)).toEqual({
      ready: true,
      text: `ready: meshcni is chained in 10-calico.conflist\nthe agent is ready, but from here: ${brokenDisk.reasons[0]} (are the flags the agent's?)`,
    });
    expect(readyReport({ ready: false, cause: "ChainBroken" }, brokenDisk, url)).toEqual({
      ready: false,
      text: `not ready (ChainBroken): ${brokenDisk.reasons[0]}`,
    });
    // A cause the disk cannot show (the node-scope policy does not bind the agent's token).
    expect(readyReport({ ready: false, cause: "PolicyNotBound" }, readyDisk, url)).toEqual({
      ready: false,
      text: "not ready (PolicyNotBound): the agent's log and its Node's MeshcniReady condition say why",
    });
  });

  it("is not ready when no agent answers, and reads the disk alone when the agent serves no /readyz", () => {
    expect(readyReport({ unreachable: "connect ECONNREFUSED 127.0.0.1:9911" }, brokenDisk, url)).toEqual({
      ready: false,
      text: `not ready: no agent answers at ${url} (connect ECONNREFUSED 127.0.0.1:9911); ${brokenDisk.reasons[0]}`,
    });
    expect(readyReport(undefined, readyDisk, "")).toEqual({ ready: true, text: "ready: meshcni is chained in 10-calico.conflist" });
    expect(readyReport(undefined, brokenDisk, "")).toEqual({ ready: false, text: `not ready: ${brokenDisk.reasons[0]}` });
  });

  it("asks on loopback an agent listening on every address", () => {
    expect(readyzUrl({ host: "", port: 9911 })).toBe("http://127.0.0.1:9911/readyz");
    expect(readyzUrl({ host: "::", port: 9911 })).toBe("http://[::1]:9911/readyz");
    expect(readyzUrl({ host: "10.0.0.5", port: 80 })).toBe("http://10.0.0.5:80/readyz");
  });

  it("reads the verdict and the cause from /readyz, and calls any other answer none", async () => {
    const answers = [
      [200, "ok\n"],
      [503, "not ready: ChainBroken\n"],
      [500, "oops\n"],
    ] as const;
    let next = 0;
    const server = createServer((_req, res) => {
      const [status, body] = answers[next++]!;
      res.writeHead(status, { connection: "close" }).end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const at = readyzUrl({ host: "127.0.0.1", port: (server.address() as AddressInfo).port });
    try {
      expect(await askReadyz(at)).toEqual({ ready: true, cause: undefined });
      expect(await askReadyz(at)).toEqual({ ready: false, cause: "ChainBroken" });
      expect(await askReadyz(at)).toEqual({ unreachable: "it answered HTTP 500" });
    } finally {
      await new Promise((resolve) => {
        server.close(resolve);
        server.closeAllConnections();
      });
    }
    expect(await askReadyz(at)).toMatchObject({ unreachable: expect.stringContaining("ECONNREFUSED") });
  });
});
