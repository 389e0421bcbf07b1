import { rmSync } from "node:fs";
import { join } from "node:path";
import { checkChain } from "../cni/chain.js";
import { activeConfig, type ConfigFile, readConfigFiles } from "../cni/config-dir.js";
import { dropInName, readDropIns } from "../cni/drop-ins.js";
import { writeAtomic } from "../files.js";
import { pluginExecutables } from "./bin-dir.js";
import { installBinary } from "./binary.js";
import type { EntryWrite } from "./conflist.js";
import { type ChainMode, type DropInPlan, planDropIn } from "./dropin.js";
import { removeDropIn, triggerReload, writeDropIn } from "./dropin-files.js";
import { freshMemory, type NetDirMemory, type NetDirPlan, planNetDir } from "./netdir.js";
import { type InstallOptions, type InstallPaths, installPaths } from "./options.js";
import { checkInstalled, type Readiness } from "./readiness.js";
import { loadTemplate, renderTemplate, type Template } from "./template.js";
import { removeEntries, removeInstalledFiles, runningRecordedPods } from "./uninstall.js";

/** What a look at the net dir did: a conflist plan (planNetDir's) or a drop-in's, and the entries skipped. */
export type NetDirSync = (NetDirPlan & { writtenOverMs?: number }) | (DropInPlan & { kind: "dropin"; probe: boolean });

/**
 * What meshcni installs on one host, as I/O around the pure deciders: the binary in the
 * CNI bin dir, meshcni's entry as a drop-in (planDropIn) or in the active config (planNetDir
 * decides from the disk as it is and what was last seen; this carries the plan out and keeps
 * that memory), the readiness the disk shows, and the uninstall. The agent runs it from its
 * loop, tells it the chain mode the runtime's answers allow, and says what it did.
 */
export class Installation {
  readonly paths: InstallPaths;
  /** The entry it chains: the options' netconf, until replaceTemplate. */
  private current: Template;
  private memory: NetDirMemory = freshMemory;
  /** How meshcni is chained: the agent sets it from what the runtime says it loaded. */
  mode: ChainMode = { kind: "asking" };

  constructor(
    readonly options: InstallOptions,
    private readonly now: () => number,
  ) {
    this.paths = installPaths(options);
    this.current = loadTemplate(options);
  }

  get template(): Template {
    return this.current;
  }

  /** The entry rendered for this host from a netconf text, as the options' is. */
  render(text: string): Template {
    return renderTemplate(text, this.paths.kubeconfigOnHost, this.options.agentSocket);
  }

  /** Chains another entry from the next syncNetDir on (the binary it names: installBinary). */
  replaceTemplate(template: Template): void {
    this.current = template;
  }

  /** Where the binary goes, named by the template's type; undefined without a usable template. */
  get binaryPath(): string | undefined {
    return this.template.ok ? join(this.paths.binDir, this.template.binaryName) : undefined;
  }

  /** Copies the binary to binaryPath unless the same is there. */
  installBinary(path: string): { installed: boolean; bytes: number } {
    return installBinary(this.options.sourceBinary, path);
  }

  /**
   * Looks at the net dir and carries out what the mode's planner decides: the drop-in (its
   * dir's old ones removed, the configs' entries taken out after it, a reload made when the
   * config dir itself is not written), or the entry in the active config (the drop-ins
   * removed first, so that the write that chains it reloads the runtime without them).
   * Returns what it did, so the caller can report and schedule it; undefined without a
   * usable template or while the runtime has not been asked. A drop-in plan that cannot be
   * carried out (the active config forbids them) moves to the conflist mode at once. The
   * memory is kept only once the writes succeeded: a failed write is planned again.
   */
  syncNetDir(): (NetDirSync & { skipped: string[] }) | undefined {
    if (!this.template.ok || this.mode.kind === "asking") return undefined;
    const skipped: string[] = [];
    const files = readConfigFiles(this.paths.netDir, (name, why) => skipped.push(`${name}: ${why}`));
    const active = activeConfig(files);
    if (active?.config.valid && this.mode.kind !== "conflist") {
      const probe = this.mode.kind === "probe";
      const plan = planDropIn(files, readDropIns(this.paths.netDir), this.template.entry, probe);
      if (plan.kind === "dropin") {
        this.carryOutDropIn(plan, files);
        return { ...plan, probe, skipped };
      }
      this.mode = { kind: "conflist", why: plan.why };
    }
    return { ...this.syncConflist(files), skipped };
  }

  private carryOutDropIn(plan: DropInPlan & { kind: "dropin" }, files: ConfigFile[]): void {
    const { netDir } = this.paths;
    if (plan.write !== undefined) writeDropIn(netDir, plan.network, plan.write);
    for (const { name, text } of plan.removals) writeAtomic(join(netDir, name), text, modeOf(files, name));
    for (const network of plan.stale) removeDropIn(netDir, network);
    if (plan.reload) triggerReload(netDir);
  }

  /** The entry in the active config, as before drop-ins; meshcni's drop-ins are removed first. */
  private syncConflist(files: ConfigFile[]): NetDirPlan & { writtenOverMs?: number } {
    if (!this.template.ok) throw new Error("no usable template");
    const { netDir } = this.paths;
    const dropIns = this.mode.kind === "conflist" ? readDropIns(netDir) : [];
    for (const { network } of dropIns) removeDropIn(netDir, network);
    const executables = pluginExecutables(this.paths.pluginDirs, this.options.hostRoot);
    const runnable = (config: Parameters<typeof checkChain>[0]) => {
      const chain = checkChain(config, executables, new Set());
      return chain.missing.length === 0 && chain.invalid.length === 0;
    };
    const { plan, memory } = planNetDir(files, this.template.entry, this.memory, this.now(), runnable);
    const writes: EntryWrite[] = plan.kind === "apply" ? [...plan.removals, ...plan.fallbacks, ...(plan.write ? [plan.write] : [])] : [];
    for (const { name, text, replaces } of writes) {
      writeAtomic(join(netDir, name), text, modeOf(files, replaces ?? name));
      if (replaces) rmSync(join(netDir, replaces), { force: true });
    }
    if (dropIns.length > 0 && writes.length === 0) triggerReload(netDir);
    this.memory = memory;
    // When the file meshcni re-chained was last written by someone else: the re-chain's latency, whatever woke the agent.
    const source = plan.kind === "apply" && plan.write ? (plan.write.replaces ?? plan.write.name) : undefined;
    const writtenOverMs = files.find((file) => file.name === source)?.modifiedMs;
    return writtenOverMs === undefined ? plan : { ...plan, writtenOverMs };
  }

  /** Whether the disk chains meshcni by its drop-in alone: the active config's network's dir holds its entry, no config holds one. */
  chainedByDropInOnly(): boolean {
    if (!this.template.ok) return false;
    const { entry } = this.template;
    const plan = planDropIn(readConfigFiles(this.paths.netDir), readDropIns(this.paths.netDir), entry, false);
    return plan.kind === "dropin" && plan.write === undefined && plan.removals.length === 0;
  }

  /** Whether the binary, the kubeconfig and the entry are in place, from the disk and the mode. */
  readiness(): Readiness {
    return checkInstalled(this.options, this.template, this.mode);
  }

  /**
   * Takes meshcni's drop-ins away and its entry out of every config (the runtime reloaded
   * once they are gone), then removes the kubeconfig, the binary, the socket and the state
   * dir; returns the configs changed and the pods that keep their redirect (their netns
   * still there).
   */
  uninstall(): { changed: string[]; running: string[] } {
    const { netDir } = this.paths;
    const dropIns = readDropIns(netDir);
    for (const { network } of dropIns) removeDropIn(netDir, network);
    // Without a usable template, the entry meshcni writes unless told otherwise.
    const changed = removeEntries(netDir, this.template.ok ? this.template.binaryName : "meshcni");
    if (dropIns.length > 0 && changed.length === 0) triggerReload(netDir);
    changed.push(...dropIns.map(({ network }) => join(network, dropInName)));
    const running = runningRecordedPods(this.paths.stateDir, this.options.hostRoot);
    removeInstalledFiles(this.paths, this.template.ok ? this.template.binaryName : undefined);
    return { changed, running };
  }
}

/** A config's permission bits as read: a rewrite keeps them; a new file is 0644, as runtimes expect. */
const modeOf = (files: ConfigFile[], name: string) => files.find((file) => file.name === name)?.mode ?? 0o644;
