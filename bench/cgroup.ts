import { existsSync, mkdirSync, readFileSync, rmdirSync } from "node:fs";
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
    private readonly peakFile: string,
  ) {}

  static create(name: string): MemoryCgroup {
    const v2 = existsSync("/sys/fs/cgroup/cgroup.controllers");
    const dir = v2 ? join("/sys/fs/cgroup", name) : join("/sys/fs/cgroup/memory", name);
    mkdirSync(dir);
    return new MemoryCgroup(dir, join(dir, v2 ? "memory.peak" : "memory.max_usage_in_bytes"));
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
    return Math.round(Number(readFileSync(this.peakFile, "utf8").trim()) / 1024 / 102.4) / 10;
  }

  /** Removes the cgroup (its processes have ended). */
  remove(): void {
    rmdirSync(this.dir);
  }
}
