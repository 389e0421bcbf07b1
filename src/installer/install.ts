import { rmSync } from "node:fs";
import { join } from "node:path";
import { checkChain } from "../cni/chain.js";
import { readConfigFiles } from "../cni/config-dir.js";
import { writeAtomic } from "../files.js";
import { pluginExecutables } from "./bin-dir.js";
import { installBinary } from "./binary.js";
import { freshMemory, type NetDirMemory, type NetDirPlan, planNetDir } from "./netdir.js";
import { type InstallOptions, type InstallPaths, installPaths } from "./options.js";
import { checkInstalled, type Readiness } from "./readiness.js";
import { loadTemplate, renderTemplate, type Template } from "./template.js";
import { removeEntries, removeInstalledFiles, runningRecordedPods } from "./uninstall.js";

/**
 * What meshcni installs on one host, as I/O around the pure deciders: the binary in the
 * CNI bin dir, meshcni's entry in the active config (planNetDir decides from the disk as
 * it is and what was last seen; this carries the plan out and keeps that memory), the
 * readiness the disk shows, and the uninstall. The agent runs it from its loop and says
 * what it did.
 */
export class Installation {
  readonly paths: InstallPaths;
  /** The entry it chains: the options' netconf, until replaceTemplate. */
  private current: Template;
  private memory: NetDirMemory = freshMemory;

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
   * Looks at the net dir and carries out what planNetDir decides: the other configs' entries
   * removed, the active config written with the entry (a .conf it replaces removed). Returns
   * the plan, so the caller can report and schedule it; undefined without a usable template.
   * The memory is kept only once the writes succeeded: a failed write is planned again.
   */
  syncNetDir(): (NetDirPlan & { writtenOverMs?: number; skipped: string[] }) | undefined {
    if (!this.template.ok) return undefined;
    const skipped: string[] = [];
    const files = readConfigFiles(this.paths.netDir, (name, why) => skipped.push(`${name}: ${why}`));
    // A file rewritten keeps its mode (an operator's 0600 stays so); a new one is 0644, as runtimes expect.
    const modeOf = (name: string) => files.find((file) => file.name === name)?.mode ?? 0o644;
    const executables = pluginExecutables(this.paths.pluginDirs, this.options.hostRoot);
    const runnable = (config: Parameters<typeof checkChain>[0]) => {
      const chain = checkChain(config, executables, new Set());
      return chain.missing.length === 0 && chain.invalid.length === 0;
    };
    const { plan, memory } = planNetDir(files, this.template.entry, this.memory, this.now(), runnable);
    if (plan.kind === "apply") {
      for (const { name, text } of plan.removals) writeAtomic(join(this.paths.netDir, name), text, modeOf(name));
      for (const write of [...plan.fallbacks, ...(plan.write ? [plan.write] : [])]) {
        writeAtomic(join(this.paths.netDir, write.name), write.text, modeOf(write.replaces ?? write.name));
        if (write.replaces) rmSync(join(this.paths.netDir, write.replaces), { force: true });
      }
    }
    this.memory = memory;
    // When the file meshcni re-chained was last written by someone else: the re-chain's latency, whatever woke the agent.
    const source = plan.kind === "apply" && plan.write ? (plan.write.replaces ?? plan.write.name) : undefined;
    const writtenOverMs = files.find((file) => file.name === source)?.modifiedMs;
    return writtenOverMs === undefined ? { ...plan, skipped } : { ...plan, writtenOverMs, skipped };
  }

  /** Whether the binary, the kubeconfig and the entry are in place, from the disk. */
  readiness(): Readiness {
    return checkInstalled(this.options, this.template);
  }

  /**
   * Takes meshcni's entry out of every config, then removes the kubeconfig, the binary, the
   * socket and the state dir; returns the configs changed and the pods that keep their
   * redirect (their netns still there).
   */
  uninstall(): { changed: string[]; running: string[] } {
    // Without a usable template, the entry meshcni writes unless told otherwise.
    const changed = removeEntries(this.paths.netDir, this.template.ok ? this.template.binaryName : "meshcni");
    const running = runningRecordedPods(this.paths.stateDir, this.options.hostRoot);
    removeInstalledFiles(this.paths, this.template.ok ? this.template.binaryName : undefined);
    return { changed, running };
  }
}
