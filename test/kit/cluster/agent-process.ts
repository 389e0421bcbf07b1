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

/** A process's CPU time so far (user and system, seconds) and its peak resident memory (VmHWM, MB), from /proc. */
export function processUsage(pid: number): { cpuSeconds: number; peakRssMb: number } {
  // The fields after the command's ")" (which may hold spaces): utime and stime are the 12th and 13th, in clock ticks (100 a second here).
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]);
  const peakKb = Number(/^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]);
  return { cpuSeconds: ticks / 100, peakRssMb: peakKb / 1024 };
}
