// What /proc says of a process on this machine: found by its command line, its resident
// memory, its CPU time, its open file descriptors and its descendants (the bench's and the
// soak's readings).
import { readdirSync, readFileSync } from "node:fs";
import { basename } from "node:path";

/** The processes whose argv[0]'s base name is `command` and whose arguments include `argument`. */
export function processesOf(command: string, argument: string): number[] {
  return readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
        return basename(argv[0] ?? "") === command && argv.includes(argument);
      } catch {
        return false; // ended while listed
      }
    })
    .map(Number);
}

/** /proc/<pid>/stat's fields from the state (field 3) on: the command before it may hold spaces. */
const statFields = (pid: number | string) => readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");

/** User and system time of the process and of its children it waited for, in clock ticks. */
export function cpuTicks(pid: number): number {
  // utime, stime, cutime, cstime: stat's fields 14 to 17.
  return statFields(pid)
    .slice(11, 15)
    .reduce((sum, field) => sum + Number(field), 0);
}

/** cpuTicks of a process and of each of its descendants still running: a resident child's time (the agent's writers) counted as it is spent. */
export function treeCpuTicks(pid: number): number {
  return withDescendants([pid]).reduce((sum, each) => {
    try {
      return sum + cpuTicks(each);
    } catch {
      return sum; // ended while read: its time is now its parent's (children waited for)
    }
  }, 0);
}

/** Every process below `roots` (a container's, below its shim), the roots included. */
export function withDescendants(roots: number[]): number[] {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    try {
      parentOf.set(Number(entry), Number(statFields(entry)[1])); // ppid: field 4
    } catch {
      // ended while listed
    }
  }
  const found = new Set(roots);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, parent] of parentOf) {
      if (found.has(parent) && !found.has(pid)) {
        found.add(pid);
        grew = true;
      }
    }
  }
  return [...found];
}

/** Resident memory, in MB. */
export const rssMb = (pid: number) => Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]) / 1024;

/** Open file descriptors (sockets, files, pipes). */
export const openFds = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;
