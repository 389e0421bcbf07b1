import { getEventListeners } from "node:events";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AgentWriter, WriterPool } from "../../../../src/agent/writers/writer.js";
import type { WriteAsk } from "../../../../src/applier/contract.js";
import { createLogger } from "../../../../src/log.js";

/** A stand-in for `meshcni apply`: what it does with a request is named by the request's container id. */
const fakeWriter = `#!/usr/bin/env node
const lines = require("node:readline").createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const { id, target, verb, netns } = JSON.parse(line);
  if (verb === "LOOK" && netns.includes("/hang")) return;
  if (verb === "LOOK") return process.stdout.write(JSON.stringify({ id, looked: netns.map((path) => path === "/gone" ? {} : { identity: "0:" + path.length, generation: 7 }) }) + "\\n");
  const how = target.containerId;
  if (how === "ok") process.stdout.write(JSON.stringify({ id, done: true }) + "\\n");
  else if (how === "refused") process.stdout.write(JSON.stringify({ id, failed: "nftables said no" }) + "\\n");
  else if (how === "garbage") process.stdout.write("{\\"id\\": " + id + ", \\"done\\": \\"maybe\\"}\\n");
  else if (how === "exit") process.exit(3);
  else if (how === "env") process.stdout.write(JSON.stringify({ id, failed: "gc timer " + process.env.BUN_GC_TIMER_INTERVAL }) + "\\n");
  else if (how === "slow") setTimeout(() => process.stdout.write(JSON.stringify({ id, done: true }) + "\\n"), 300);
  // "hang": no answer at all.
});
`;

const ask = (containerId: string): WriteAsk => ({
  verb: "DEL",
  hostRoot: "",
  target: { containerId, ifname: "eth0", netns: "" },
  netconf: "{}",
  proxyPorts: [4143, 4140],
});

describe("the agent's writer process", () => {
  let dir: string;
  let binary: string;
  let writer: AgentWriter | undefined;
  const log = createLogger({ level: "error" });
  const far = () => performance.now() + 60_000;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "meshcni-writer-"));
    binary = join(dir, "meshcni");
    writeFileSync(binary, fakeWriter);
    chmodSync(binary, 0o755);
  });
  afterEach(() => {
    writer?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("answers each request with the child's own answer, in order, one child for all", async () => {
    writer = new AgentWriter(binary, log);
    const outcomes = await Promise.all([
      writer.write(ask("ok"), far()),
      writer.write(ask("refused"), far()),
      writer.write(ask("ok"), far()),
    ]);
    expect(outcomes).toEqual([{ done: true }, { failed: "nftables said no" }, { done: true }]);
  });

  it("answers a look at pods' netns in its turn among the writes, with what the child says of each; the pool asks its idlest writer", async () => {
    writer = new AgentWriter(binary, log);
    const [slow, looked] = await Promise.all([writer.write(ask("slow"), far()), writer.look("", ["/var/run/netns/a", "/gone"], far())]);
    expect(slow).toEqual({ done: true });
    expect(looked).toEqual({ looked: [{ identity: "0:16", generation: 7 }, {}] });
    // Behind a slow write, a look that cannot start in time is not sent: the sweep runs its process.
    void writer.write(ask("slow"), far());
    expect(await writer.look("", ["/var/run/netns/a"], performance.now() + 50)).toEqual({
      failed: "it waited for the writer past the plugin's wait",
    });
    const busy = new AgentWriter(binary, log);
    const idle = new AgentWriter(binary, log);
    const pool = new WriterPool([busy, idle]);
    try {
      void busy.write(ask("hang"), far());
      expect(await pool.look("", ["/var/run/netns/a"], performance.now() + 2000)).toEqual({
        looked: [{ identity: "0:16", generation: 7 }],
      });
    } finally {
      pool.stop();
    }
  });

  it("a look given up (the agent stops) fails at once: waiting, it is not sent; in hand, its hung child is killed", async () => {
    writer = new AgentWriter(binary, log);
    const stopping = new AbortController();
    // One answered leaves nothing on the signal, which lives as long as the agent (a look a minute).
    expect(await writer.look("", ["/var/run/netns/a"], far(), stopping.signal)).toEqual({ looked: [{ identity: "0:16", generation: 7 }] });
    expect(getEventListeners(stopping.signal, "abort")).toHaveLength(0);
    const inHand = writer.look("", ["/hang"], far(), stopping.signal);
    const queued = writer.look("", ["/var/run/netns/a"], far(), stopping.signal);
    setTimeout(() => stopping.abort(), 100);
    expect(await queued).toEqual({ failed: "the agent is stopping" });
    expect(await inHand).toEqual({ failed: "the writer ended (SIGKILL)" });
    expect(await writer.look("", ["/var/run/netns/a"], far(), stopping.signal)).toEqual({ failed: "the agent is stopping" });
    expect(await writer.write(ask("ok"), far())).toEqual({ done: true });
  });

  it("runs its child with Bun's GC timer at 30 s (an idle writer is then never woken)", async () => {
    writer = new AgentWriter(binary, log);
    expect(await writer.write(ask("env"), far())).toEqual({ failed: "gc timer 30000" });
  });

  it("a request whose deadline passes while another is written is not sent: the plugin writes it", async () => {
    writer = new AgentWriter(binary, log);
    const slow = writer.write(ask("slow"), far());
    const late = writer.write(ask("ok"), performance.now() + 50);
    expect(await late).toEqual({ failed: "it waited for the writer past the plugin's wait" });
    expect(await slow).toEqual({ done: true });
    expect(await writer.write(ask("ok"), far())).toEqual({ done: true });
  });

  it("a request waiting behind a hung write is failed at its deadline, not when the hung one ends", async () => {
    writer = new AgentWriter(binary, log, undefined, 5000);
    void writer.write(ask("hang"), far());
    const started = performance.now();
    expect(await writer.write(ask("ok"), performance.now() + 100)).toEqual({ failed: "it waited for the writer past the plugin's wait" });
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it("a child that exits, answers garbage or hangs fails that request, and a new child takes the next", async () => {
    // Long enough for a node child to start on a loaded machine: what ends the exit and garbage cases is the child.
    writer = new AgentWriter(binary, log, undefined, 2000);
    expect(await writer.write(ask("exit"), far())).toEqual({ failed: "the writer ended (exit code 3)" });
    expect(await writer.write(ask("ok"), far())).toEqual({ done: true });
    expect(await writer.write(ask("garbage"), far())).toEqual({ failed: "the writer ended (SIGKILL)" });
    expect(await writer.write(ask("ok"), far())).toEqual({ done: true });
    const started = performance.now();
    expect(await writer.write(ask("hang"), far())).toEqual({ failed: "the writer ended (SIGKILL)" });
    expect(performance.now() - started).toBeGreaterThanOrEqual(1990);
    expect(await writer.write(ask("ok"), far())).toEqual({ done: true });
  });

  it("a binary that cannot start fails the request; stopping fails what waits", async () => {
    writer = new AgentWriter(join(dir, "absent"), log);
    expect(await writer.write(ask("ok"), far())).toMatchObject({ failed: expect.stringContaining("ENOENT") });
    const stopping = new AgentWriter(binary, log);
    const hanging = stopping.write(ask("hang"), far());
    const waiting = stopping.write(ask("ok"), far());
    stopping.stop();
    expect(await waiting).toEqual({ failed: "the agent is stopping" });
    expect(await hanging).toEqual({ failed: "the writer ended (exit code 0)" });
  });
});

describe("the agent's writers", () => {
  it("send an attachment's requests to one writer, in order, and spread containers over all of them", async () => {
    const seen: string[][] = [[], [], []];
    const fake = (index: number) =>
      ({
        write: async (ask: WriteAsk) => {
          seen[index]!.push(`${ask.verb} ${ask.target.containerId}`);
          return { done: true };
        },
        stop: () => undefined,
      }) as unknown as AgentWriter;
    const pool = new WriterPool([fake(0), fake(1), fake(2)]);
    const ids = Array.from({ length: 30 }, (_, i) => `container-${i}`);
    for (const id of ids) await pool.write(ask(id), 0);
    for (const id of ids) await pool.write(ask(id), 0);
    for (const id of ids) {
      const holders = seen.filter((requests) => requests.includes(`DEL ${id}`));
      expect(holders).toHaveLength(1);
      expect(holders[0]!.filter((request) => request === `DEL ${id}`)).toHaveLength(2);
    }
    expect(seen.every((requests) => requests.length > 0)).toBe(true);
  });
});
