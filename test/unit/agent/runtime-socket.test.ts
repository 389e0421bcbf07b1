import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RuntimeSocketCheck, runtimeRefusalLimitMs } from "../../../src/agent/runtime-socket.js";

describe("the agent's check of the runtime's socket as mounted", () => {
  let root: string;
  const socket = () => join(root, "run", "cri.sock");
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), "meshcni-runtime-socket-"));
    mkdirSync(join(root, "run"));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it("calls the agent dead once the socket has refused connections for the limit (a runtime restarted under the mount), alive again once it answers", async () => {
    // A socket nobody listens on any more: what a bind mount of a restarted runtime's old socket is.
    spawnSync("python3", ["-c", "import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])", socket()]);
    let now = 0;
    const check = new RuntimeSocketCheck("/run/cri.sock", root, () => now);
    await check.check();
    expect(check.problem()).toBeUndefined();
    now += runtimeRefusalLimitMs;
    await check.check();
    expect(check.problem()).toMatch(/^the container runtime's socket .*cri\.sock has refused connections for 10 s/);
    rmSync(socket());
    const server = createServer((connection) => connection.destroy()).listen(socket());
    try {
      await new Promise((resolve) => server.once("listening", resolve));
      await check.check();
      expect(check.problem()).toBeUndefined();
    } finally {
      server.close();
    }
  });

  it("asks nothing without a runtime socket (none configured, or none there with auto)", () => {
    const none = new RuntimeSocketCheck("", root, () => 0);
    none.check();
    expect(none.problem()).toBeUndefined();
    const auto = new RuntimeSocketCheck("auto", root, () => runtimeRefusalLimitMs * 2);
    auto.check();
    expect(auto.problem()).toBeUndefined();
  });
});
