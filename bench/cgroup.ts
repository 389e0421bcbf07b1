import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * A memory cgroup of its own (cgroup v2, else v1's memory controller) for a burst of
 * processes: what the kernel charges them together is what the node pays (pages shared
 * between them, the binary's included, counted once; each process's own pages each
 * time), unlike the sum of each process's peak RSS. Processes enter it through wrap().
 */
export class MemoryCgroup {
  private constructor(
    readonly dir: string,
    private readonly v2: boolean,
  ) {}

  static create(name: string): MemoryCgroup {
    const v2 = existsSync("/sys/fs/cgroup/cgroup.controllers");
    const dir = v2 ? join("/sys/fs/cgroup", name) : join("/sys/fs/cgroup/memory", name);
    mkdirSync(dir);
    return new MemoryCgroup(dir, v2);
  }

  /** Holds the cgroup to `bytes`, as a container's memory limit does: past it, the kernel kills. */
  limit(bytes: number): this {
    writeFileSync(join(this.dir, this.v2 ? "memory.max" : "memory.limit_in_bytes"), String(bytes));
    return this;
  }

  /** Processes of the cgroup the kernel killed for want of memory. */
  oomKills(): number {
    const text = readFileSync(join(this.dir, this.v2 ? "memory.events" : "memory.oom_control"), "utf8");
    return Number(/^oom_kill (\d+)$/m.exec(text)?.[1] ?? 0);
  }

  /** The command, run from a shell that first moves itself into the cgroup (exec keeps it there; its children follow). */
  wrap(command: string, args: string[]): { command: string; args: string[] } {
    return {
      command: "/bin/sh",
      args: ["-c", `echo $$ > ${join(this.dir, "cgroup.procs")} && exec "$@"`, "sh", command, ...args],
    };
  }

  /** The most memory charged to the cgroup at once, in MB. */
  peakMb(): number {
    const peak = readFileSync(join(this.dir, this.v2 ? "memory.peak" : "memory.max_usage_in_bytes"), "utf8");
    return Math.round(Number(peak.trim()) / 1024 / 102.4) / 10;
  }

  /** Removes the cgroup (its processes have ended). */
  remove(): void {
    rmdirSync(this.dir);
  }
}
