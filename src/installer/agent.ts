import { existsSync, type FSWatcher, readdirSync, readFileSync, rmSync, statSync, watch } from "node:fs";
import type { Server } from "node:http";
import { join } from "node:path";
import { AuditMonitor } from "../audit/monitor.js";
import { sha256, writeAtomic } from "../files.js";
import { createNodeApi, kubeConfigFrom, type NodeApi } from "../kube/cluster.js";
import type { Logger } from "../log.js";
import { type ConfigFile, chainInto, chooseActive, isChained, isConfigName, ownEntryCount, parseConfig, unchain } from "./conflist.js";
import { renderKubeconfig } from "./kubeconfig.js";
import type { InstallerMetrics } from "./metrics.js";
import { type InstallerOptions, installerPaths } from "./options.js";
import { serveProbes } from "./server.js";
import { checkReadiness, loadTemplate, type Readiness, readConfigFiles } from "./state.js";
import { syncTaint } from "./taint.js";
import type { Template } from "./template.js";

/** A foreign file that stays invalid this long is taken as broken, not half-written. */
const halfWrittenGraceMs = 2000;
const halfWrittenRetryMs = 25;
/**
 * Re-chains of one file within the window that mean another agent keeps undoing ours:
 * a fight runs at machine speed, while a primary CNI rewrites its config now and then.
 */
const fightWindowMs = 10_000;
const fightThreshold = 20;
const maxBackoffMs = 60_000;
/**
 * fs.watch under Bun (1.4) on Linux loses events, e.g. a delete right after a rename
 * over the same name (oven-sh/bun#24875, #36328 are of the same family). A stat
 * signature of both dirs, taken this often, catches what the watcher drops.
 */
const pollMs = 100;

/** Names, inodes, sizes and mtimes of a dir's entries: changes when any of them does. */
function dirSignature(dir: string): string {
  try {
    return readdirSync(dir)
      .sort()
      .map((name) => {
        try {
          const stat = statSync(join(dir, name));
          return `${name}:${stat.ino}:${stat.size}:${stat.mtimeMs}`;
        } catch {
          return `${name}:gone`;
        }
      })
      .join("|");
  } catch (error) {
    return `unreadable:${(error as NodeJS.ErrnoException).code}`;
  }
}

/**
 * The node agent: installs the binary, keeps the kubeconfig current, and keeps meshcni's
 * entry last in the active CNI config. Level-triggered: every watch event, retry and
 * resync runs the same reconcile, which compares the disk with what should be there, so
 * event kinds do not matter and its own writes change nothing the second time.
 */
export class InstallAgent {
  private readonly paths: ReturnType<typeof installerPaths>;
  private readonly template: Template;
  private readonly watchers: FSWatcher[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private server: Server | undefined;
  private queued: NodeJS.Immediate | undefined;
  private firstEventAt: number | undefined;
  /** Content hash of each config as it last held our entry (written by us, or found so). */
  private readonly chainedContent = new Map<string, string>();
  private readonly rechainTimes = new Map<string, number[]>();
  private readonly invalidSince = new Map<string, number>();
  private backoffMs = 0;
  private backoffUntil = 0;
  private stopped = false;
  private monitor: AuditMonitor | undefined;
  private monitorApi: NodeApi | undefined;
  private nodeApi: { api: NodeApi; kubeconfigHash: string } | undefined;
  /** Whether the node carries the startup taint, as last set; undefined until known. */
  private taintPresent: boolean | undefined;
  private taintBusy = false;
  readiness: Readiness = { ready: false, reasons: ["starting"], active: undefined };

  constructor(
    private readonly options: InstallerOptions,
    private readonly log: Logger,
    private readonly metrics: InstallerMetrics,
  ) {
    this.paths = installerPaths(options);
    this.template = loadTemplate(options);
  }

  async start(): Promise<void> {
    if (!this.template.ok) this.log.error(this.template.reason);
    else this.installBinary();
    // Watch before the first reconcile, so no write between the two goes unseen.
    this.watch(this.paths.netDir, (name) => isConfigName(name ?? "") || name === null);
    this.watch(this.options.serviceAccountDir, () => true);
    const resync = setInterval(() => this.schedule(), this.options.resyncSeconds * 1000);
    this.timers.add(resync);
    const watched = [this.paths.netDir, this.options.serviceAccountDir];
    let signature = watched.map(dirSignature).join("\n");
    const poll = setInterval(() => {
      const next = watched.map(dirSignature).join("\n");
      if (next !== signature) this.schedule(performance.now());
      signature = next;
    }, pollMs);
    this.timers.add(poll);
    if (this.options.listen) {
      this.server = await serveProbes(this.options.listen, () => this.readiness, this.metrics);
      const address = this.server.address();
      this.log.info("serving /readyz and /metrics", {
        address: typeof address === "object" && address ? `${address.address}:${address.port}` : address,
      });
    }
    this.reconcile();
  }

  /** SIGTERM: take meshcni out of every config, remove the kubeconfig, keep the binary unless asked. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.monitor?.stop();
    for (const watcher of this.watchers) watcher.close();
    for (const timer of this.timers) clearTimeout(timer);
    if (this.queued) clearImmediate(this.queued);
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    try {
      for (const file of readConfigFiles(this.paths.netDir)) this.unchainFile(file, "uninstalling");
    } catch (error) {
      this.log.error("could not remove meshcni's entries", { error: (error as Error).message });
    }
    rmSync(this.paths.kubeconfig, { force: true });
    if (this.options.removeBinary && this.template.ok) rmSync(join(this.paths.binDir, this.template.binaryName), { force: true });
    this.log.info("uninstalled", { binaryKept: !this.options.removeBinary });
  }

  private watch(dir: string, relevant: (name: string | null) => boolean): void {
    try {
      const watcher = watch(dir, (event, name) => {
        this.log.debug("watch event", { dir, event, name });
        if (relevant(name ? String(name) : null)) this.schedule(performance.now());
      });
      watcher.on("error", (error) => this.log.error("watch failed", { dir, error: error.message }));
      this.watchers.push(watcher);
    } catch (error) {
      this.log.error("cannot watch, relying on the periodic resync", { dir, error: (error as Error).message });
    }
  }

  /** Coalesces a burst of events into one reconcile on the next turn of the loop. */
  private schedule(eventAt?: number, delayMs = 0): void {
    if (this.stopped) return;
    if (eventAt !== undefined) this.firstEventAt ??= eventAt;
    if (delayMs > 0) {
      const timer = setTimeout(() => (this.timers.delete(timer), this.schedule()), delayMs);
      this.timers.add(timer);
      return;
    }
    this.queued ??= setImmediate(() => {
      this.queued = undefined;
      this.reconcile();
    });
  }

  private installBinary(): void {
    if (!this.template.ok) return;
    const target = join(this.paths.binDir, this.template.binaryName);
    try {
      const source = readFileSync(this.options.sourceBinary);
      if (existsSync(target) && statSync(target).size === source.length && readFileSync(target).equals(source)) {
        this.log.info("binary already installed", { path: target });
        return;
      }
      writeAtomic(target, source, 0o755);
      this.log.info("binary installed", { path: target, bytes: source.length });
    } catch (error) {
      this.log.error("cannot install the binary", { path: target, error: (error as Error).message });
    }
  }

  /** Writes the kubeconfig when the token, CA or address changed; the token is never logged. */
  private ensureKubeconfig(): void {
    const { apiHost, apiPort } = this.options;
    if (!apiHost || !apiPort) {
      this.log.error("KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are needed for the kubeconfig");
      return;
    }
    let token: string;
    try {
      token = readFileSync(join(this.options.serviceAccountDir, "token"), "utf8").trim();
    } catch (error) {
      this.log.error("no service account token", { dir: this.options.serviceAccountDir, error: (error as NodeJS.ErrnoException).code });
      return;
    }
    const caPem = this.options.caFile && existsSync(this.options.caFile) ? readFileSync(this.options.caFile, "utf8") : undefined;
    const content = renderKubeconfig(
      { token, caPem },
      { protocol: this.options.apiProtocol, host: apiHost, port: apiPort, skipTlsVerify: this.options.skipTlsVerify },
    );
    const current = existsSync(this.paths.kubeconfig) ? readFileSync(this.paths.kubeconfig, "utf8") : undefined;
    if (current === content) return;
    writeAtomic(this.paths.kubeconfig, content, 0o600);
    this.log.info(current === undefined ? "kubeconfig written" : "kubeconfig rewritten (token or CA changed)", {
      path: this.paths.kubeconfig,
    });
  }

  reconcile(): void {
    if (this.stopped) return;
    this.log.debug("reconcile");
    const eventAt = this.firstEventAt;
    this.firstEventAt = undefined;
    try {
      this.ensureKubeconfig();
      if (this.template.ok) this.chain(eventAt);
    } catch (error) {
      this.log.error("reconcile failed; retrying at the next event or resync", { error: (error as Error).message });
    }
    const readiness = checkReadiness(this.options, this.template);
    if (readiness.ready !== this.readiness.ready) {
      this.log.info(
        readiness.ready ? "ready" : "not ready",
        readiness.ready ? { active: readiness.active } : { reasons: readiness.reasons },
      );
    }
    this.readiness = readiness;
    this.metrics.ready.set(readiness.ready ? 1 : 0);
    this.followReadiness(readiness.ready);
  }

  /** An API client for this node, made anew when the kubeconfig changed (a rotated token). */
  private currentNodeApi(): NodeApi | undefined {
    if (!this.options.node || !existsSync(this.paths.kubeconfig)) return undefined;
    const kubeconfigHash = sha256(readFileSync(this.paths.kubeconfig));
    if (this.nodeApi?.kubeconfigHash !== kubeconfigHash) {
      this.nodeApi = { api: createNodeApi(kubeConfigFrom(this.paths.kubeconfig), this.options.node), kubeconfigHash };
    }
    return this.nodeApi.api;
  }

  /** Once ready: audit and repair the node's meshed pods; lift (or restore) the startup taint. */
  private followReadiness(ready: boolean): void {
    const { node, startupTaint, restoreTaint } = this.options;
    if (!node) return;
    const api = this.currentNodeApi();
    if (!api) return;
    if (ready && this.monitorApi !== api) {
      this.monitorApi = api;
      this.monitor ??= new AuditMonitor(
        {
          binary: this.options.sourceBinary,
          node,
          kubeconfig: this.paths.kubeconfig,
          hostRoot: this.options.hostRoot,
          stateDir: this.options.stateDir,
          policy: this.options.repair,
          self: this.options.self,
          auditSeconds: this.options.auditSeconds,
        },
        this.log,
        {
          unprotected: (status) => this.metrics.unprotectedPods.inc({ status }),
          repaired: (action) => this.metrics.repairs.inc({ action }),
          audited: (seconds) => this.metrics.auditSeconds.set(seconds),
        },
      );
      this.monitor.start(api).catch((error: Error) => this.log.error("cannot watch this node's pods", { error: error.message }));
    }
    const wanted = ready ? false : restoreTaint ? true : undefined;
    if (!startupTaint || wanted === undefined || wanted === this.taintPresent || this.taintBusy) return;
    this.taintBusy = true;
    syncTaint(api, startupTaint, wanted)
      .then((changed) => {
        this.taintPresent = wanted;
        if (changed) this.log.info(wanted ? "startup taint restored" : "startup taint removed", { node, taint: startupTaint.key });
      })
      .catch((error: Error) => {
        this.log.error("cannot update the node's taints; retrying", { node, error: error.message });
        this.schedule(undefined, 1000);
      })
      .finally(() => (this.taintBusy = false));
  }

  private chain(eventAt: number | undefined): void {
    if (!this.template.ok) return;
    const files = readConfigFiles(this.paths.netDir);
    const active = chooseActive(files);
    // A foreign file that sorts before the active one may be mid-write: give it a moment.
    const now = performance.now();
    const halfWritten = files.filter((file) => (!active || file.name < active.file.name) && !parseConfig(file).valid);
    for (const name of [...this.invalidSince.keys()]) if (!halfWritten.some((file) => file.name === name)) this.invalidSince.delete(name);
    const waiting = halfWritten.filter(
      (file) => now - (this.invalidSince.get(file.name) ?? (this.invalidSince.set(file.name, now), now)) < halfWrittenGraceMs,
    );
    if (waiting.length > 0) {
      this.log.debug("config file is not valid yet, retrying shortly", { files: waiting.map((file) => file.name) });
      this.schedule(eventAt, halfWrittenRetryMs);
      return;
    }
    for (const file of halfWritten)
      this.log.warn("ignoring an invalid CNI config, as the runtime does", {
        file: file.name,
        reason: (parseConfig(file) as { reason: string }).reason,
      });
    if (!active) return;

    for (const file of files) {
      if (file.name !== active.file.name) this.unchainFile(file, `${active.file.name} is the active config`);
    }
    if (isChained(active.config, this.template.entry)) {
      this.chainedContent.set(active.file.name, sha256(active.file.text));
      return;
    }

    const chained = chainInto(active.file, active.config, this.template.entry);
    if (ownEntryCount(active.config) > 1) this.log.warn("replacing duplicate meshcni entries with one", { file: active.file.name });
    // A re-chain: this file held our entry, and someone has changed it since.
    const rechain = this.chainedContent.has(chained.name) && this.chainedContent.get(active.file.name) !== sha256(active.file.text);
    if (rechain && this.fighting(chained.name)) return;
    writeAtomic(join(this.paths.netDir, chained.name), chained.text);
    this.chainedContent.set(chained.name, sha256(chained.text));
    if (chained.replaces) rmSync(join(this.paths.netDir, chained.replaces), { force: true });
    if (rechain) {
      this.metrics.rechains.inc();
      if (eventAt !== undefined) this.metrics.rechainLatency.set((performance.now() - eventAt) / 1000);
    }
    this.log.info(rechain ? "re-chained meshcni" : "chained meshcni", {
      file: join(this.paths.netDir, chained.name),
      ...(chained.replaces ? { wrapped: chained.replaces } : {}),
      ...(rechain && eventAt !== undefined ? { latencyMs: Math.round((performance.now() - eventAt) * 10) / 10 } : {}),
    });
  }

  /** Takes our entry out of a config file (atomically), if it holds one. */
  private unchainFile(file: ConfigFile, why: string): void {
    const stripped = unchain(parseConfig(file));
    if (stripped === undefined) return;
    writeAtomic(join(this.paths.netDir, file.name), stripped);
    this.log.info("removed meshcni's entry", { file: join(this.paths.netDir, file.name), why });
  }

  /** True while backing off from another agent that keeps removing our entry. */
  private fighting(name: string): boolean {
    const now = Date.now();
    if (now < this.backoffUntil) {
      this.schedule(undefined, this.backoffUntil - now);
      return true;
    }
    const recent = [...(this.rechainTimes.get(name) ?? []), now].filter((time) => now - time < fightWindowMs);
    this.rechainTimes.set(name, recent);
    if (recent.length < fightThreshold) {
      this.backoffMs = 0;
      return false;
    }
    this.backoffMs = Math.min(maxBackoffMs, Math.max(1000, this.backoffMs * 2));
    this.backoffUntil = now + this.backoffMs;
    this.rechainTimes.set(name, []);
    this.log.warn(
      `another agent keeps removing meshcni's entry from ${join(this.paths.netDir, name)} (${recent.length} times in ${fightWindowMs / 1000} s); ` +
        `backing off ${this.backoffMs / 1000} s. Is a CNI that owns the config dir exclusively running (e.g. Cilium with cni.exclusive=true)?`,
    );
    this.schedule(undefined, this.backoffMs);
    return true;
  }
}
