// The agent's process as the runtime knows it: the running container of its pod (the API
// names it), that container's task (containerd gives its PID). Never a process found by its
// name on the host: another agent there (a test's, a stray one) would be taken for it.
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
