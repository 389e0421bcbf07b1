// The agent's process as the runtime knows it: the running container of its pod (the API
// names it), that container's task (containerd gives its PID). Never a process found by its
// name on the host: another agent there (a test's, a stray one) would be taken for it.
import { readFileSync } from "node:fs";
import type { RealCluster } from "./cluster.js";
import { nodeName } from "./layout.js";

interface AgentPods {
  items: Array<{
    metadata: { deletionTimestamp?: string };
    spec: { nodeName?: string };
    status: { containerStatuses?: Array<{ name: string; containerID?: string; state?: { running?: object } }> };
  }>;
}

/** The PID (in the host's PID namespace) of the agent of meshcni's DaemonSet on `node`; undefined between two of its lives. */
export async function agentProcess(cluster: RealCluster, node = nodeName, namespace = "meshcni"): Promise<number | undefined> {
  const pods = await cluster.get<AgentPods>("pods", "-n", namespace, "-l", "app.kubernetes.io/name=meshcni");
  const pod = pods.items.find((item) => !item.metadata.deletionTimestamp && item.spec.nodeName === node);
  const container = pod?.status.containerStatuses?.find((status) => status.name === "install");
  if (!container?.state?.running || !container.containerID) return undefined;
  const id = container.containerID.replace(/^containerd:\/\//, "");
  // `ctr tasks ls`: TASK, PID, STATUS, a line each.
  const task = (await cluster.ctr("tasks", "ls")).split("\n").find((line) => line.startsWith(`${id} `));
  const [, pid, status] = task?.trim().split(/\s+/) ?? [];
  return status === "RUNNING" && Number(pid) > 0 ? Number(pid) : undefined;
}

/**
 * A process's CPU time so far with its waited-for children's (the agent's sweeps run as
 * child processes), seconds, and its own peak resident memory (VmHWM, MB), from /proc.
 */
export function processUsage(pid: number): { cpuSeconds: number; peakRssMb: number } {
  // The fields after the command's ")" (which may hold spaces): utime, stime, cutime and cstime are the 12th to 15th, in clock ticks (100 a second here).
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  const ticks = [11, 12, 13, 14].reduce((sum, at) => sum + Number(fields[at]), 0);
  return { cpuSeconds: ticks / 100, peakRssMb: peakRssMb(pid) ?? 0 };
}

/** A process's peak resident memory (VmHWM, MB); undefined once it is gone. */
function peakRssMb(pid: number): number | undefined {
  try {
    // A zombie (a sweep ended, not yet waited for) has no VmHWM line.
    const kb = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return kb === undefined ? undefined : Number(kb) / 1024;
  } catch {
    return undefined;
  }
}

/** The highest peak memory (MB) of the process's children seen by looking every 50 ms until `signal` (a sweep lives for under a second). */
export async function childrenPeakRssMb(pid: number, signal: AbortSignal): Promise<number> {
  let highest = 0;
  while (!signal.aborted) {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").split(" ").filter(Boolean);
    for (const child of children) highest = Math.max(highest, peakRssMb(Number(child)) ?? 0);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return highest;
}
