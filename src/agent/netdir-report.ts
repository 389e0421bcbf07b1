import { join } from "node:path";
import { brokenConfigReason } from "../cni/config-dir.js";
import { dropInName } from "../cni/drop-ins.js";
import { fightWindowMs } from "../installer/fight.js";
import type { NetDirSync } from "../installer/install.js";
import type { Logger, StandingProblems } from "../log.js";
import type { AgentMetrics } from "./metrics.js";
import type { DirWatcher } from "./watch.js";

/** What the agent says and schedules of each plan the installer made for the CNI config dir. */
export class NetDirReporter {
  constructor(
    private readonly netDir: string,
    private readonly log: Logger,
    private readonly metrics: AgentMetrics,
    private readonly problems: StandingProblems,
    private readonly watcher: DirWatcher,
    private readonly now: () => number,
  ) {}

  /** Says what the installer did with the net dir (log, metrics) and schedules what it asks for: a retry, a back-off. */
  report(plan: NetDirSync & { skipped?: string[] }, eventAt: number | undefined): void {
    const { netDir } = this;
    const skipped = plan.skipped ?? [];
    this.problems.set(
      "netdir-skipped",
      skipped.length > 0 ? `entries in ${netDir} skipped, as libcni skips a directory: ${skipped.join("; ")}` : undefined,
      { level: "warn" },
    );
    if (plan.kind === "wait") {
      this.log.debug("the active config is not valid yet, retrying shortly", { file: plan.file });
      this.watcher.schedule(eventAt, plan.retryInMs);
      return;
    }
    if (plan.kind === "broken") {
      this.problems.set("netdir", brokenConfigReason(plan.file, plan.reason));
      return;
    }
    this.problems.set("netdir", undefined);
    if (plan.kind === "dropin") {
      this.reportDropIn(plan, eventAt);
      return;
    }
    for (const { name } of plan.removals) this.removedEntry(name, `${plan.active} is the active config`);
    for (const { name } of plan.fallbacks)
      this.log.info("chained meshcni into the next config as well", {
        file: join(netDir, name),
        why: `the runtime cannot run ${plan.active}'s chain: CRI-O skips it for the next config it can run`,
      });
    if (plan.fight) {
      const { file, holdMs, started } = plan.fight;
      if (started) {
        this.metrics.fights.inc();
        this.log.warn(
          `another agent keeps removing meshcni's entry from ${join(netDir, file)} (${started.rechains} times in ${fightWindowMs / 1000} s); ` +
            `backing off ${started.backoffMs / 1000} s. Is a CNI that owns the config dir exclusively running (e.g. Cilium with cni.exclusive=true)?`,
        );
      }
      this.watcher.schedule(undefined, holdMs);
    }
    const { write } = plan;
    if (!write) return;
    if (write.duplicates) this.log.warn("replaced duplicate meshcni entries with one", { file: write.name });
    const rechain = write.cause !== "chain";
    // From the event that woke it; else (a resync or a token's wake got there first) from the file's own write time.
    const latencyMs = !rechain
      ? undefined
      : eventAt !== undefined
        ? this.now() - eventAt
        : plan.writtenOverMs !== undefined
          ? Math.max(0, Date.now() - plan.writtenOverMs)
          : undefined;
    if (rechain) this.metrics.rechains.inc({ cause: write.cause });
    if (latencyMs !== undefined) this.metrics.rechainDuration.observe(latencyMs / 1000);
    this.log.info(rechain ? "re-chained meshcni" : "chained meshcni", {
      file: join(netDir, write.name),
      ...(rechain ? { cause: write.cause } : {}),
      ...(write.replaces ? { wrapped: write.replaces } : {}),
      ...(latencyMs === undefined ? {} : { latencyMs: Math.round(latencyMs * 10) / 10 }),
    });
  }

  /** The drop-in written (the probe, or the entry), the configs' entries it replaces, the old networks' drop-ins removed. */
  private reportDropIn(plan: NetDirSync & { kind: "dropin" }, eventAt: number | undefined): void {
    const file = join(this.netDir, plan.network, dropInName);
    // From the net dir's change that woke the agent (another network's config, say) to the drop-in written.
    const latency = eventAt === undefined ? {} : { latencyMs: Math.round((this.now() - eventAt) * 10) / 10 };
    const message = plan.probe
      ? "wrote meshcni's probe, to see whether the container runtime loads drop-ins"
      : "chained meshcni by its drop-in";
    if (plan.write !== undefined) this.log.info(message, { file, ...latency });
    for (const { name } of plan.removals) this.removedEntry(name, `meshcni is chained by its drop-in ${file}`);
    for (const network of plan.stale)
      this.log.info("removed meshcni's drop-in", {
        file: join(this.netDir, network, dropInName),
        why: `${plan.network} is the active network`,
      });
  }

  removedEntry(name: string, why: string): void {
    this.log.info("removed meshcni's entry", { file: join(this.netDir, name), why });
  }
}
