import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { parseAgentOptions } from "../../../src/agent/options.js";
import type { ManifestOptions } from "../../../src/manifests/options.js";
import { FakeApiServer } from "../api/server.js";
import { until } from "../common.js";
import { meshcniBinary } from "../paths.js";
import { AgentHost, primaryBinDir } from "./host.js";

export interface LogLine {
  level: string;
  msg: string;
  [key: string]: unknown;
}

/** The agent on an AgentHost: runs the compiled binary, reads its JSON log lines, its probes and its metrics. */
export class AgentHarness extends AgentHost {
  readonly logs: LogLine[] = [];
  readonly stderr: string[] = [];
  private child: ChildProcess | undefined;
  /** The node the running agent was given (--node or NODE_NAME): its metrics carry it. */
  private node: string | undefined;
  private exited: Promise<number | null> | undefined;
  address = "";

  /** The API server start() made when the test gave none. */
  ownApi: FakeApiServer | undefined;
  /** How the agent's command is run (bench/cgroup.ts: inside a memory cgroup); as it is by default. */
  wrap = (command: string, args: string[]) => ({ command, args });

  protected override tokenRotated(token: string): void {
    this.ownApi?.agentTokens.add(token);
  }

  args(extra: string[] = []): string[] {
    const dirs = this.onHost ? ["--net-dir", this.netDir, "--bin-dir", this.binDir, "--state-dir", this.stateDir] : [];
    dirs.push("--extra-bin-dir", primaryBinDir);
    // Flags given later (extra) win over these.
    return ["--host-root", this.hostRoot, ...dirs, "--service-account-dir", this.serviceAccountDir, ...extra];
  }

  get env(): NodeJS.ProcessEnv {
    return { ...process.env, KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443", LOG_LEVEL: "debug" };
  }

  /**
   * Starts the agent. Without an API server of the test's (startWithApi), one of its own:
   * the agent mints the plugin's token from it, as it would from a cluster's.
   */
  async start(extra: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<void> {
    if (env.KUBERNETES_SERVICE_HOST === undefined) {
      if (!this.ownApi) {
        this.ownApi = await new FakeApiServer().start();
        // The projected token stays what the test made it (token-one…); the API takes it as the agent's.
        this.ownApi.agentTokens.add(this.projectedToken());
        this.rotateToken(this.projectedToken(), this.ownApi.caPem);
      }
      env = { KUBERNETES_SERVICE_HOST: "127.0.0.1", KUBERNETES_SERVICE_PORT: String(this.ownApi.port), ...env };
    }
    const args = this.args(["--listen", "127.0.0.1:0", "--resync-seconds", "60", ...extra]);
    const node = args.lastIndexOf("--node");
    this.node = node >= 0 ? args[node + 1] : env.NODE_NAME;
    const run = this.wrap(meshcniBinary, ["install", ...args]);
    const child = spawn(run.command, run.args, {
      env: { ...this.env, ...env },
      stdio: ["ignore", "ignore", "pipe"],
    });
    this.child = child;
    const firstLine = this.logs.length;
    this.exited = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
    let buffer = "";
    child.stderr!.on("data", (chunk: Buffer) => {
      buffer += chunk.toString();
      const lines = buffer.split("\n");
      buffer = lines.pop()!;
      for (const line of lines) {
        this.stderr.push(line);
        try {
          this.logs.push(JSON.parse(line) as LogLine);
        } catch {
          // not a log line
        }
      }
    });
    const serving = (line: LogLine, index: number) => index >= firstLine && line.msg === "serving /readyz, /healthz and /metrics";
    await this.waitFor(() => this.logs.some(serving), 10_000);
    this.address = String(this.logs.find(serving)!.address);
  }

  /** Starts the agent against an in-test API server: its token and CA projected, its address in the env. */
  async startWithApi(api: FakeApiServer, extra: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<void> {
    this.rotateToken(api.agentToken, api.caPem);
    await this.start(extra, { KUBERNETES_SERVICE_HOST: "127.0.0.1", KUBERNETES_SERVICE_PORT: String(api.port), ...env });
  }

  /** The agent's process id, while it runs. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** The agent's peak resident set so far (VmHWM), in MB. */
  peakRssMb(): number {
    const status = readFileSync(`/proc/${this.child?.pid}/status`, "utf8");
    return Number(/^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1]) / 1024;
  }

  /** Sends a signal (SIGSTOP: the agent hangs; SIGCONT: it goes on). */
  signal(signal: NodeJS.Signals): void {
    this.child?.kill(signal);
  }

  /** Sends a signal and returns the exit code. */
  async stop(signal: NodeJS.Signals = "SIGTERM"): Promise<number | null> {
    this.child?.kill(signal);
    const code = await this.exited;
    this.child = undefined;
    return code ?? null;
  }

  async readyz(): Promise<{ status: number; body: string }> {
    const response = await fetch(`http://${this.address}/readyz`);
    return { status: response.status, body: await response.text() };
  }

  /** Whether the agent logged "not ready" with a reason holding `text` (the probe itself answers only "not ready"). */
  notReadyBecause(text: string): boolean {
    return this.logs.some((line) => line.msg === "not ready" && (line.reasons as string[]).some((reason) => reason.includes(text)));
  }

  /** The agent's /metrics as Prometheus scrapes it. */
  async scrape(): Promise<string> {
    return (await fetch(`http://${this.address}/metrics`)).text();
  }

  /**
   * A series' value (undefined: no such series), named as the agent writes it less the
   * node label. Run with --node, every series must carry node="NODE" (the alerts name the
   * node by it): a scrape with one that does not throws.
   */
  async metric(name: string): Promise<number | undefined> {
    const series = (await this.scrape()).split("\n").filter((line) => line && !line.startsWith("#"));
    if (this.node !== undefined) {
      const unlabelled = series.filter((line) => !new RegExp(`[{,]node="${this.node}"[,}]`).test(line));
      if (unlabelled.length > 0) throw new Error(`series without node="${this.node}": ${unlabelled.slice(0, 3).join("; ")}`);
    }
    const line = series
      .map((entry) =>
        entry
          .replace(/,?node="[^"]*"/, "")
          .replace("{,", "{")
          .replace("{}", ""),
      )
      .find((entry) => entry.startsWith(`${name} `));
    return line === undefined ? undefined : Number(line.split(" ")[1]);
  }

  /**
   * `until`, rejecting with the agent's log when the condition never holds. Every 10 ms:
   * a condition that asks the agent (its /metrics, /readyz) every 2 ms kept it mostly busy
   * answering, and slowed what the test waited for.
   */
  async waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
    await until(condition, timeoutMs, 10, () => `agent log:\n${this.stderr.join("\n")}`);
  }

  async cleanup(): Promise<void> {
    if (this.child) await this.stop("SIGKILL");
    await this.ownApi?.stop();
    this.removeDirs();
  }
}

/**
 * The manifests' settings that size the agent's RBAC, as an operator who runs it with these
 * flags renders them (`meshcni manifests --repair … --startup-taint …`): for authorizeAs.
 */
export function rbacOptionsFor(agentArgs: string[]): Pick<ManifestOptions, "repair" | "startupTaint"> {
  const { sweep, startupTaint } = parseAgentOptions(["--node", "n", ...agentArgs], {}, "/meshcni");
  return { repair: sweep.repair, startupTaint: startupTaint && `${startupTaint.spec.key}:${startupTaint.spec.effect}` };
}
