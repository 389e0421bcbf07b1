import { readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeApiServer } from "../kit/api/server.js";
import { meshcniBinary } from "../kit/paths.js";

/**
 * The commands an operator runs against the API server (status, audit, rules), the compiled
 * binary, when the server is not what it should be: each ends within its --timeout, exit 2, in
 * one line naming the server, the context and what to do.
 */
describe("meshcni status, audit and rules, when the API server fails them", () => {
  let api: FakeApiServer;
  let silent: Server;
  const held: Socket[] = [];
  let silentPort = 0;
  /** A kubeconfig of the in-test server's, its server and context changed. */
  const variant = (name: string, change: (text: string) => string) => {
    const path = join(api.dir, name);
    writeFileSync(path, change(readFileSync(api.writeKubeconfig(), "utf8")));
    return path;
  };
  const commands = {
    status: [],
    audit: ["--node", "n1", "--state-dir", "/nonexistent", "--cri-socket", ""],
    rules: ["--node", "n1", "--state-dir", "/nonexistent", "--cri-socket", "", "shop/web"],
  } as const;
  const run = (command: keyof typeof commands, args: string[], env: Record<string, string> = {}) =>
    execa(meshcniBinary, [command, ...commands[command], ...args], { reject: false, env, timeout: 20_000 });

  beforeAll(async () => {
    api = await new FakeApiServer().start();
    // Accepts every connection and never answers: not even the TLS handshake.
    silent = createServer((socket) => {
      // Reset by each command as it gives up.
      socket.on("error", () => undefined);
      held.push(socket);
    });
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    silentPort = (silent.address() as { port: number }).port;
  });
  afterAll(async () => {
    for (const socket of held) socket.destroy();
    silent.close();
    await api.stop();
  });

  it.each(Object.keys(commands) as Array<keyof typeof commands>)(
    "%s: a server that accepts and never answers: given up at --timeout, naming the server and the context",
    async (command) => {
      const kubeconfig = variant("silent", (text) => text.replace(`127.0.0.1:${api.port}`, `127.0.0.1:${silentPort}`));
      const started = performance.now();
      const result = await run(command, ["--kubeconfig", kubeconfig, "--timeout", "2"]);
      expect(performance.now() - started).toBeLessThan(10_000);
      expect([result.exitCode, result.stdout]).toEqual([2, ""]);
      expect(result.stderr).toBe(
        `meshcni ${command}: no answer from the API server https://127.0.0.1:${silentPort} (context test, from ${kubeconfig}) within 2 s: ` +
          "check that it runs and is reachable from here (kubectl --context test get --raw /readyz), or give it longer with --timeout",
      );
    },
  );

  it.each(Object.keys(commands) as Array<keyof typeof commands>)("%s: nothing listening: refused, in words", async (command) => {
    const kubeconfig = variant("refused", (text) => text.replace(`127.0.0.1:${api.port}`, "127.0.0.1:1"));
    const result = await run(command, ["--kubeconfig", kubeconfig]);
    expect([result.exitCode, result.stderr]).toEqual([
      2,
      `meshcni ${command}: cannot reach the API server https://127.0.0.1:1 (context test, from ${kubeconfig}): the connection was refused (ECONNREFUSED); check the server address in ${kubeconfig}, and that the API server runs`,
    ]);
  });

  it("names what is wrong with the credentials: 401 with the user, 403 with what the command needs", async () => {
    const expired = variant("expired", (text) => text.replace(`token: ${api.token}`, "token: expired"));
    const unauthorized = await run("status", ["--kubeconfig", expired]);
    expect([unauthorized.exitCode, unauthorized.stderr]).toEqual([
      2,
      `meshcni status: the API server https://127.0.0.1:${api.port} (context test, from ${expired}) refused the credentials of user meshcni (401 Unauthorized): they are wrong or expired; get new ones for context test`,
    ]);
    // The agent's token: its roles list no Events across the cluster.
    const forbidden = await run("status", ["--kubeconfig", api.writeAgentKubeconfig()]);
    expect(forbidden.exitCode).toBe(2);
    expect(forbidden.stderr).toMatch(
      /^meshcni status: the API server \S+ \(context test, from \S+\) forbids user meshcni what this command reads \(403: events is forbidden: User "system:serviceaccount:meshcni:meshcni" cannot list resource "events" in API group "" at the cluster scope\); it needs list on nodes, pods and events in every namespace$/,
    );
  });

  it("says where it looked when there is no kubeconfig, and which context is missing", async () => {
    const none = await run("status", [], { HOME: join(api.dir, "no-home"), KUBECONFIG: "" });
    expect([none.exitCode, none.stderr]).toEqual([
      2,
      `meshcni status: no kubeconfig: give --kubeconfig FILE or set KUBECONFIG (there is no ${join(api.dir, "no-home")}/.kube/config, and this is no pod)`,
    ]);
    const contextless = variant("contextless", (text) => text.replace(/^current-context: .*$/m, ""));
    const unset = await run("audit", ["--kubeconfig", contextless]);
    expect([unset.exitCode, unset.stderr]).toEqual([
      2,
      `meshcni audit: ${contextless} sets no current context: choose one with kubectl config use-context NAME (test), or give --kubeconfig`,
    ]);
    const dangling = variant("dangling", (text) => text.replace(/^current-context: .*$/m, "current-context: gone"));
    const missing = await run("rules", ["--kubeconfig", dangling]);
    expect(missing.stderr).toBe(
      `meshcni rules: ${dangling}: its current context "gone" names no cluster it defines: fix it, or choose another with kubectl config use-context NAME`,
    );
    for (const command of Object.keys(commands) as Array<keyof typeof commands>) {
      const unreadable = await run(command, ["--kubeconfig", join(api.dir, "absent")]);
      expect([unreadable.exitCode, unreadable.stderr]).toEqual([
        2,
        `meshcni ${command}: cannot read kubeconfig ${join(api.dir, "absent")}: ENOENT`,
      ]);
    }
  });

  it("refuses a --timeout that is no whole number of seconds from 1 to 600", async () => {
    for (const value of ["0", "0x5", "1e2", "601", "-3", "2.5"]) {
      const result = await run("status", ["--kubeconfig", "/nonexistent", `--timeout=${value}`]);
      expect([result.exitCode, result.stderr]).toEqual([
        2,
        `meshcni status: --timeout must be whole seconds from 1 to 600, not ${JSON.stringify(value)} (see meshcni status --help)`,
      ]);
    }
    const dashed = await run("status", ["--timeout", "-3"]);
    expect(dashed.stderr).toBe(
      'meshcni status: --timeout needs a value (for one that starts with "-", write --timeout=VALUE) (see meshcni status --help)',
    );
  });
});
