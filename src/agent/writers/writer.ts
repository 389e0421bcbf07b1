import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { type LookRequest, parseWriteReply, type WriteAsk } from "../../applier/contract.js";
import type { NetnsLook } from "../../audit/netns-look.js";
import { errorMessage } from "../../errors.js";
import type { Logger } from "../../log.js";

/** What became of a request to the writer: done, or why not (the plugin then does it itself). */
export type WriteOutcome = { done: true } | { failed: string };
/** What became of a LOOK: each netns as it is now, or why not. */
export type LookOutcome = { looked: NetnsLook[] } | { failed: string };
type Answer = WriteOutcome | LookOutcome;
type Ask = WriteAsk | Omit<LookRequest, "id">;
type Waiting = { ask: Ask; settle(outcome: Answer): void; expiry: NodeJS.Timeout };

/**
 * One write (an nf_tables batch, an iptables-restore or two) takes milliseconds. A writer
 * still on one after this is hung: past iptables' own 10 s limit (iptables/exec.ts), which
 * ends a hung iptables child with a clear error first, rather than orphaning it.
 */
const writeTimeoutMs = 15_000;

/**
 * Bun's GC timer looks at a writer's heap every second by default: idle (its heap unchanged),
 * it still woke ~0.65 times a second, 0.33 mCPU a writer; every 30 s, none, and no more
 * memory held after a burst of requests (2026-12-07, Bun 1.4.5). Bun's own setting, read at
 * its start; one already set is kept.
 */
const writerRuntime = { BUN_GC_TIMER_INTERVAL: process.env.BUN_GC_TIMER_INTERVAL ?? "30000" };

/**
 * The agent's writer: a `meshcni apply` child, started at the first request and again after
 * it exits, fed one request at a time. Writing belongs in a process of its own: entering a
 * netns moves the calling thread, and the agent's thread holds its API connections. A
 * request whose deadline passes while it waits is not sent (the plugin stops waiting then,
 * and writes itself); one the child does not answer in time kills it.
 */
export class AgentWriter {
  private child: ChildProcessWithoutNullStreams | undefined;
  private nextId = 1;
  private readonly queue: Waiting[] = [];
  private current: { id: number; settle(outcome: Answer): void; timer: NodeJS.Timeout } | undefined;
  private stopped = false;

  constructor(
    private readonly binary: string,
    private readonly log: Logger,
    private readonly now: () => number = () => performance.now(),
    private readonly timeoutMs = writeTimeoutMs,
  ) {}

  /**
   * Carries out `ask` if it can start before `deadline` (on `now`'s clock); still waiting
   * then, it is failed at once, so the plugin gets the decision back while it still waits.
   */
  write(ask: WriteAsk, deadline: number): Promise<WriteOutcome> {
    return this.send(ask, deadline).then((outcome) => ("looked" in outcome ? { failed: "a look's answer to a write" } : outcome));
  }

  /**
   * How each netns at these host paths is now (read only), if it can be asked before `deadline`.
   * Aborted (the agent stops), it is failed at once; a child on it then is killed: it writes nothing.
   */
  look(hostRoot: string, netns: string[], deadline: number, signal?: AbortSignal): Promise<LookOutcome> {
    return this.send({ verb: "LOOK", hostRoot, netns }, deadline, signal).then((outcome) =>
      "done" in outcome ? { failed: "a write's answer to a look" } : outcome,
    );
  }

  /** How many requests it holds, the one in hand included. */
  load(): number {
    return this.queue.length + (this.current ? 1 : 0);
  }

  private send(ask: Ask, deadline: number, signal?: AbortSignal): Promise<Answer> {
    if (this.stopped || signal?.aborted) return Promise.resolve({ failed: "the agent is stopping" });
    return new Promise((resolve) => {
      // The monitor's signal lives as long as the agent: its listener goes when the request is settled.
      const abandoned = () => this.abandon(waiting);
      const settle = (outcome: Answer) => {
        signal?.removeEventListener("abort", abandoned);
        resolve(outcome);
      };
      const waiting: Waiting = {
        ask,
        settle,
        expiry: setTimeout(
          () => {
            const at = this.queue.indexOf(waiting);
            if (at < 0) return;
            this.queue.splice(at, 1);
            settle({ failed: "it waited for the writer past the plugin's wait" });
          },
          Math.max(0, deadline - this.now()),
        ),
      };
      this.queue.push(waiting);
      signal?.addEventListener("abort", abandoned, { once: true });
      this.next();
    });
  }

  /** A request given up: failed if it still waits, its child killed if it is in hand. */
  private abandon(waiting: Waiting): void {
    const at = this.queue.indexOf(waiting);
    if (at >= 0) {
      this.queue.splice(at, 1);
      clearTimeout(waiting.expiry);
      waiting.settle({ failed: "the agent is stopping" });
    } else if (this.current?.settle === waiting.settle) this.child?.kill("SIGKILL");
  }

  /** Ends the child (it finishes the request in hand: its stdin closes) and fails what waits. */
  stop(): void {
    this.stopped = true;
    for (const waiting of this.queue.splice(0)) {
      clearTimeout(waiting.expiry);
      waiting.settle({ failed: "the agent is stopping" });
    }
    this.child?.stdin.end();
  }

  private next(): void {
    if (this.current) return;
    const waiting = this.queue.shift();
    if (!waiting) return;
    clearTimeout(waiting.expiry);
    let child: ChildProcessWithoutNullStreams;
    try {
      child = this.child ?? this.start();
    } catch (error) {
      waiting.settle({ failed: `cannot start the writer: ${errorMessage(error)}` });
      this.next();
      return;
    }
    const id = this.nextId++;
    const timer = setTimeout(() => {
      this.log.warn("the writer did not answer in time: killing it", { ms: this.timeoutMs });
      child.kill("SIGKILL");
    }, this.timeoutMs);
    this.current = { id, settle: waiting.settle, timer };
    child.stdin.write(`${JSON.stringify({ ...waiting.ask, id })}\n`);
  }

  private finish(outcome: Answer): void {
    const current = this.current;
    if (!current) return;
    clearTimeout(current.timer);
    this.current = undefined;
    current.settle(outcome);
    this.next();
  }

  private start(): ChildProcessWithoutNullStreams {
    const child = spawn(this.binary, ["apply"], { stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, ...writerRuntime } });
    this.child = child;
    child.stdin.on("error", () => undefined);
    // Its log lines are the plugin's (they also go to the netconf's log_file): passed on as they are.
    child.stderr.pipe(process.stderr, { end: false });
    createInterface({ input: child.stdout, crlfDelay: Number.POSITIVE_INFINITY }).on("line", (line) => {
      let reply: ReturnType<typeof parseWriteReply>;
      try {
        reply = parseWriteReply(line);
      } catch (error) {
        this.log.warn("the writer answered what is no answer: restarting it", { reason: errorMessage(error) });
        child.kill("SIGKILL");
        return;
      }
      if (reply.id !== this.current?.id) return;
      this.finish("done" in reply ? { done: true } : "looked" in reply ? { looked: reply.looked } : { failed: reply.failed });
    });
    const ended = (why: string) => {
      if (this.child !== child) return;
      this.child = undefined;
      if (!this.stopped) this.log.warn("the writer ended: started again at the next request", { why });
      this.finish({ failed: `the writer ended (${why})` });
    };
    child.once("error", (error) => ended(errorMessage(error)));
    child.once("exit", (code, signal) => ended(signal ?? `exit code ${code}`));
    return child;
  }
}

/**
 * Several writers, each request to the one its container id picks: an attachment's ADD and
 * DEL (and a Multus pod's attachments) go to one writer, in order; different pods are
 * written side by side, which pays where a write waits on iptables-restore.
 */
export class WriterPool {
  constructor(private readonly writers: AgentWriter[]) {}

  write(ask: WriteAsk, deadline: number): Promise<WriteOutcome> {
    let hash = 0;
    for (const char of ask.target.containerId) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
    return this.writers[hash % this.writers.length]!.write(ask, deadline);
  }

  /** A look, asked of the writer holding the fewest requests. */
  look(hostRoot: string, netns: string[], deadline: number, signal?: AbortSignal): Promise<LookOutcome> {
    const idlest = this.writers.reduce((best, writer) => (writer.load() < best.load() ? writer : best));
    return idlest.look(hostRoot, netns, deadline, signal);
  }

  stop(): void {
    for (const writer of this.writers) writer.stop();
  }
}
