import { createServer, type Server, type Socket, connect as tcpConnect } from "node:net";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { closeApiSessions } from "../../../src/kube/api-session.js";
import { livenessTiming } from "../../../src/kube/session-liveness.js";
import { getJson, streamWatch } from "../../../src/kube/transport.js";
import { FakeApiServer } from "../../kit/api/server.js";
import { kubeConfigOf } from "../../kit/common.js";

/**
 * A TCP relay in front of the in-test API server that can go silent: the connections it holds
 * stay open and carry nothing either way (a server host gone without a reset, a NAT that
 * dropped its state), while new connections pass.
 */
class SilencingRelay {
  private readonly server: Server;
  private readonly pairs: Array<[Socket, Socket]> = [];
  port = 0;

  constructor(target: number) {
    this.server = createServer((client) => {
      const upstream = tcpConnect(target, "127.0.0.1");
      for (const socket of [client, upstream]) socket.on("error", () => undefined);
      client.pipe(upstream).pipe(client);
      this.pairs.push([client, upstream]);
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.address() as { port: number }).port;
    return this;
  }

  /** Every connection held now carries nothing more, and none is closed. */
  silence(): void {
    for (const [client, upstream] of this.pairs.splice(0)) {
      client.unpipe(upstream);
      upstream.unpipe(client);
      client.pause();
      upstream.pause();
      this.silenced.push(client, upstream);
    }
  }
  private readonly silenced: Socket[] = [];

  stop(): void {
    for (const socket of [...this.silenced, ...this.pairs.flat()]) socket.destroy();
    this.server.close();
  }
}

describe("the API client's one HTTP/2 connection", () => {
  const api = new FakeApiServer();
  const saved = { ...livenessTiming };
  beforeAll(async () => {
    await api.start();
  });
  afterEach(() => {
    Object.assign(livenessTiming, saved);
    closeApiSessions();
  });
  afterAll(() => api.stop());

  const configFor = (name: string, token: string, server?: string) => {
    const path = api.writeKubeconfig(join(api.dir, name), token);
    const config = kubeConfigOf(path);
    if (server) config.clusters[0] = { ...config.clusters[0]!, server };
    return config;
  };

  it("carries every kubeconfig of one server and TLS identity, whatever its token; another identity opens its own", async () => {
    const first = api.requests.length;
    const read = (config: ReturnType<typeof configFor>) => getJson(config, "/api/v1/pods", {}, AbortSignal.timeout(5000));
    await read(configFor("admin", api.token));
    await read(configFor("agent", api.agentToken));
    const insecure = configFor("insecure", api.token);
    const { caData: _trusted, ...cluster } = insecure.clusters[0]!;
    insecure.clusters[0] = { ...cluster, skipTLSVerify: true };
    await read(insecure);
    const seen = api.requests.slice(first).map((request) => `${request.who} ${request.connection}`);
    expect(seen).toEqual([expect.stringMatching(/^admin HTTP\/2 #/), expect.anything(), expect.anything()]);
    const [admin, agent, other] = seen.map((line) => line.split(" ").slice(1).join(" "));
    expect(agent).toBe(admin);
    expect(other).not.toBe(admin);
  });

  it("keeps the path of the kubeconfig's server (a proxy's prefix) before the API's, for watches and reads alike", async () => {
    const config = configFor("prefixed", api.token, `https://127.0.0.1:${api.port}/k8s/clusters/c-1`);
    await expect(getJson(config, "/api/v1/pods", { limit: "5" }, AbortSignal.timeout(5000))).rejects.toThrow();
    expect(api.requests.at(-1)).toMatchObject({ path: "/k8s/clusters/c-1/api/v1/pods", query: { limit: "5" } });
  });

  it("drops a connection that went silent once a ping goes unanswered: the watch on it fails, and the next request opens a new one", async () => {
    Object.assign(livenessTiming, { readIdleMs: 200, pingTimeoutMs: 200 });
    const relay = await new SilencingRelay(api.port).start();
    try {
      const config = configFor("relayed", api.token, `https://127.0.0.1:${relay.port}`);
      let watch: Promise<void> | undefined;
      await new Promise<void>((accepted) => {
        watch = streamWatch(config, "/api/v1/pods", { timeoutSeconds: "300" }, AbortSignal.timeout(30_000), () => undefined, accepted);
      });
      relay.silence();
      await expect(watch!).rejects.toThrow(/answered no HTTP\/2 ping in 0.2 s/);
      const first = api.requests.length;
      await getJson(config, "/api/v1/pods", {}, AbortSignal.timeout(5000));
      const watchConnection = api.requests.filter((request) => request.query.watch).at(-1)!.connection;
      expect(api.requests[first]!.connection).not.toBe(watchConnection);
    } finally {
      relay.stop();
    }
  });

  it("keeps a connection whose watch stays quiet while the server answers its pings", async () => {
    Object.assign(livenessTiming, { readIdleMs: 100, pingTimeoutMs: 500 });
    const config = configFor("quiet", api.token);
    let events = 0;
    const done = streamWatch(
      config,
      "/api/v1/pods",
      { timeoutSeconds: "1" },
      AbortSignal.timeout(5000),
      () => events++,
      () => undefined,
    );
    // Ten read-idle periods with nothing on the watch but pings: it ends as the server ends it, at its timeout.
    await expect(done).resolves.toBeUndefined();
    expect(events).toBe(0);
  });
});
