import { type ChildProcess, spawn } from "node:child_process";
import {
  closeSync,
  existsSync,
  ftruncateSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { connect, createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseAgentOptions } from "../../../src/agent/options.js";
import type { AgentAnswer, AgentAsk } from "../../../src/agent-socket.js";
import { type Connector, parseAnswer } from "../../../src/kube/agent-connection.js";
import type { ManifestOptions } from "../../../src/manifests/options.js";
import { FakeApiServer } from "../api/server.js";
import { sleep } from "../common.js";
import { meshcniBinary } from "../paths.js";

export interface LogLine {
  level: string;
  msg: string;
  [key: string]: unknown;
}

/** The primary CNIs' plugins the tests chain, as a node with them installed has them (in `primaryBinDir`). */
export const primaryPluginTypes = [
  "calico",
  "calico-ipam",
  "cilium-cni",
  "aws-cni",
  "azure-vnet",
  "bridge",
  "host-local",
  "portmap",
  "macvlan",
  "loopback",
];

/** Where the host keeps the primaries' plugins, as Debian does: a second bin dir the runtime (and the agent) are told of. */
export const primaryBinDir = "/usr/lib/cni";

/**
 * A host in temp dirs for `meshcni install`: a CNI config dir and bin dir under a host
 * root, the primaries' plugins in a second bin dir (stubs; onHost: Debian's real ones), and a projected service-account dir that rotates like kubelet's (a `..data`
 * symlink swapped by rename). Runs the compiled binary and reads its JSON log lines.
 */
export class AgentHarness {
  readonly root = mkdtempSync(join(tmpdir(), "meshcni-agent-"));
  readonly hostRoot: string;
  readonly netDir: string;
  readonly binDir: string;
  readonly serviceAccountDir = join(this.root, "serviceaccount");
  readonly logs: LogLine[] = [];
  readonly stderr: string[] = [];
  private child: ChildProcess | undefined;
  /** The node the running agent was given (--node or NODE_NAME): its metrics carry it. */
  private node: string | undefined;
  private exited: Promise<number | null> | undefined;
  private tokenGeneration = 0;
  address = "";

  private readonly onHost: boolean;
  /** The API server start() made when the test gave none. */
  ownApi: FakeApiServer | undefined;

  /** `onHost`: no host root; the dirs are real paths, so the conflist works for cnitool here. */
  constructor(options: { onHost?: boolean } = {}) {
    this.onHost = options.onHost ?? false;
    this.hostRoot = this.onHost ? "/" : join(this.root, "host");
    this.netDir = this.onHost ? join(this.root, "net.d") : join(this.hostRoot, "/etc/cni/net.d");
    this.binDir = this.onHost ? join(this.root, "bin") : join(this.hostRoot, "/opt/cni/bin");
    mkdirSync(this.netDir, { recursive: true });
    mkdirSync(this.binDir, { recursive: true });
    if (!this.onHost) {
      const primaries = join(this.hostRoot, primaryBinDir);
      mkdirSync(primaries, { recursive: true });
      for (const type of primaryPluginTypes) writeFileSync(join(primaries, type), "#!/bin/sh\nexit 1\n", { mode: 0o755 });
    }
    mkdirSync(this.serviceAccountDir);
    this.rotateToken("token-one", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
  }

  get kubeconfigPath(): string {
    return join(this.netDir, "ZZZ-meshcni-kubeconfig");
  }

  /** Swaps the projected volume's `..data` link as kubelet's atomic writer does. */
  rotateToken(token: string, caPem = readFileSync(join(this.serviceAccountDir, "ca.crt"), "utf8")): void {
    this.ownApi?.agentTokens.add(token);
    const generation = join(this.serviceAccountDir, `..gen_${++this.tokenGeneration}`);
    mkdirSync(generation);
    writeFileSync(join(generation, "token"), token);
    writeFileSync(join(generation, "ca.crt"), caPem);
    const staged = join(this.serviceAccountDir, "..data_tmp");
    symlinkSync(`..gen_${this.tokenGeneration}`, staged);
    renameSync(staged, join(this.serviceAccountDir, "..data"));
    for (const name of ["token", "ca.crt"]) {
      if (!existsSync(join(this.serviceAccountDir, name))) symlinkSync(`..data/${name}`, join(this.serviceAccountDir, name));
    }
  }

  /** The agent's projected token, as the test last made it. */
  projectedToken(): string {
    return readFileSync(join(this.serviceAccountDir, "token"), "utf8");
  }

  /** The plugin's state dir as the agent sees it (the host's /var/run/meshcni is never touched). */
  get stateDir(): string {
    return this.onHost ? join(this.root, "state") : join(this.hostRoot, "/var/run/meshcni");
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
    const child = spawn(meshcniBinary, ["install", ...args], {
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

  /** Polls until the condition holds; rejects with the agent's log when it never does. */
  async waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<number> {
    const started = performance.now();
    while (!(await condition())) {
      if (performance.now() - started > timeoutMs)
        throw new Error(`condition not met in ${timeoutMs} ms; agent log:\n${this.stderr.join("\n")}`);
      await sleep(2);
    }
    return performance.now() - started;
  }

  /** The token in the plugin's kubeconfig ("" while there is none). */
  pluginToken(): string {
    const text = this.kubeconfig();
    return text ? (JSON.parse(text) as { users: Array<{ user: { token: string } }> }).users[0]!.user.token : "";
  }

  /** The kubeconfig the agent wrote, or "" while there is none. */
  kubeconfig(): string {
    return existsSync(this.kubeconfigPath) ? readFileSync(this.kubeconfigPath, "utf8") : "";
  }

  path(name: string): string {
    return join(this.netDir, name);
  }

  read(name: string): string {
    return readFileSync(this.path(name), "utf8");
  }

  json(name: string): { plugins?: Array<{ type: string }>; [key: string]: unknown } {
    return JSON.parse(this.read(name));
  }

  /** The types in a config's plugin list ("!" when it is missing or not JSON yet). */
  types(name: string): string[] {
    try {
      return (this.json(name).plugins ?? []).map((plugin) => plugin.type);
    } catch {
      return ["!"];
    }
  }

  /** Rewrites in place, as Calico does: open, truncate, write; no rename. */
  writeInPlace(name: string, content: string): void {
    const fd = openSync(this.path(name), existsSync(this.path(name)) ? "r+" : "w");
    ftruncateSync(fd, 0);
    writeSync(fd, content, 0);
    closeSync(fd);
  }

  /** Writes a temp file and renames it over, as the AWS VPC CNI does. */
  renameOver(name: string, content: string): void {
    writeFileSync(this.path(`.${name}.tmp`), content);
    renameSync(this.path(`.${name}.tmp`), this.path(name));
  }

  remove(name: string): void {
    rmSync(this.path(name), { force: true });
  }

  async cleanup(): Promise<void> {
    if (this.child) await this.stop("SIGKILL");
    await this.ownApi?.stop();
    rmSync(this.root, { recursive: true, force: true });
  }
}

/** Asks the agent on its socket as the plugin does, and returns its answer. */
export function askAgent(socket: string, ask: AgentAsk): Promise<AgentAnswer> {
  return new Promise((resolve, reject) => {
    const connection = connect(socket);
    let buffered = "";
    connection.setEncoding("utf8");
    connection.on("error", reject);
    connection.on("data", (chunk: string) => {
      buffered += chunk;
      if (!buffered.includes("\n")) return;
      connection.destroy();
      resolve(parseAnswer(buffered.slice(0, buffered.indexOf("\n"))));
    });
    connection.write(`${JSON.stringify(ask)}\n`);
  });
}

/**
 * The manifests' settings that size the agent's RBAC, as an operator who runs it with these
 * flags renders them (`meshcni manifests --repair … --startup-taint …`): for authorizeAs.
 */
export function rbacOptionsFor(agentArgs: string[]): Pick<ManifestOptions, "repair" | "startupTaint"> {
  const { sweep, startupTaint } = parseAgentOptions(["--node", "n", ...agentArgs], {}, "/meshcni");
  return { repair: sweep.repair, startupTaint: startupTaint && `${startupTaint.spec.key}:${startupTaint.spec.effect}` };
}

export const conflist = (name: string, plugins: object[], extra: object = {}) =>
  `${JSON.stringify({ cniVersion: "1.0.0", name, ...extra, plugins }, null, 2)}\n`;

/** The agent reader's transport over node:net, for tests run by Node (the binary uses Bun's own socket). */
export const nodeConnector: Connector = (path, on) =>
  new Promise((resolve, reject) => {
    const connection = createConnection(path);
    connection.setEncoding("utf8");
    connection.once("connect", () => {
      connection.off("error", reject);
      connection.on("error", on.error);
      resolve({ write: (text) => void connection.write(text), end: () => connection.destroy() });
    });
    connection.once("error", reject);
    connection.on("data", (text: string) => on.data(text));
    connection.on("close", () => on.close());
  });
