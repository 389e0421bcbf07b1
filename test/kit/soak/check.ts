// The soak's invariants, read from the cluster: every Ready soak pod's inbound TCP answered by
// its proxy when meshed and by its app when not (real connections from the client pod): a
// meshed pod Ready and answered by its own app is a violation at once (no pod may start
// without its redirect, and no fault here takes rules from a running pod); and whether the
// node has recovered (the API, the node, the agent, the chain, every pod Ready).
import type { RealCluster } from "../cluster/cluster.js";
import { hostPort } from "../cluster/families.js";
import { nodeName, startupTaint } from "../cluster/layout.js";
import { type AuditedPod, agentAnswersReady } from "../cluster/meshcni.js";
import { chainedTypes } from "../cluster/node.js";
import { proxyInbound } from "../cluster/workloads.js";
import { answersFrom } from "./connect.js";
import type { SeenRedirected } from "./repairs.js";
import { soakLabel } from "./workload.js";

/** How long a pod of the load may take to start before the node counts as not recovered (they start in ~3 s here). */
const startingMs = 15_000;

interface SoakPod {
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    creationTimestamp: string;
    deletionTimestamp?: string;
    labels: Record<string, string>;
  };
  status: {
    podIP?: string;
    phase?: string;
    conditions?: Array<{ type: string; status: string }>;
    containerStatuses?: Array<{ restartCount: number }>;
    initContainerStatuses?: Array<{ restartCount: number }>;
  };
}

/** A pod's sandbox as the API lists it: its IP and its containers' restarts (a new sandbox restarts them). */
const sandboxOf = (pod: SoakPod) => ({
  ip: pod.status.podIP ?? "",
  restarts: [...(pod.status.containerStatuses ?? []), ...(pod.status.initContainerStatuses ?? [])].reduce(
    (sum, status) => sum + status.restartCount,
    0,
  ),
});

/** The soak pods' sandboxes now, by uid (empty when the API does not answer). */
export async function soakSandboxes(cluster: RealCluster): Promise<Map<string, { ip: string; restarts: number }>> {
  return new Map(((await soakPods(cluster)) ?? []).map((pod) => [pod.metadata.uid, sandboxOf(pod)]));
}

const ready = (pod: SoakPod) =>
  !pod.metadata.deletionTimestamp &&
  pod.status.phase === "Running" &&
  (pod.status.conditions ?? []).some((condition) => condition.type === "Ready" && condition.status === "True");

/** What the soak pods are now, or undefined when the API does not answer. */
async function soakPods(cluster: RealCluster): Promise<SoakPod[] | undefined> {
  try {
    return (await cluster.get<{ items: SoakPod[] }>("pods", "-A", "-l", soakLabel, "--request-timeout=10s")).items;
  } catch {
    return undefined;
  }
}

export class RedirectWatch {
  /** Unmeshed pods seen answering through a proxy, since when (by uid). */
  private readonly redirectedSince = new Map<string, number>();
  /** Who answered each meshed pod's connection at the last pass (by uid): its proxy, or its own app. */
  readonly answered = new Map<string, "proxy" | "app">();
  /** Each meshed pod's sandbox when its proxy first answered there (by uid). */
  readonly redirected = new Map<string, SeenRedirected>();
  private readonly reported = new Set<string>();
  checks = 0;
  connections = 0;

  constructor(
    private readonly cluster: RealCluster,
    private readonly violation: (what: string) => void,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** One pass over the Ready soak pods: each answered through a real connection from the client. */
  async check(): Promise<void> {
    const pods = await soakPods(this.cluster);
    if (!pods) return;
    this.checks++;
    this.answered.clear();
    const holders = new Map<string, number>();
    for (const { status } of pods) if (status.podIP) holders.set(status.podIP, (holders.get(status.podIP) ?? 0) + 1);
    // An address two pods hold (an IPAM fault, not a redirect's) answers for either: it proves nothing.
    const judged = pods.filter((candidate) => ready(candidate) && holders.get(candidate.status.podIP ?? "") === 1);
    const answers = await answersFrom(
      this.cluster,
      judged.map((pod) => pod.status.podIP!),
    );
    for (const pod of judged) {
      const { name, namespace, uid, labels } = pod.metadata;
      const answer = answers.get(pod.status.podIP!)!;
      // No answer (the exec failed, the pod went): proves nothing either way.
      if (answer.startsWith("error:")) continue;
      this.connections++;
      const redirected = answer.startsWith(proxyInbound);
      if (labels[soakLabel] !== "unmeshed") {
        if (redirected || answer.startsWith(`${name} `)) this.answered.set(uid, redirected ? "proxy" : "app");
        const sandbox = sandboxOf(pod);
        const earlier = this.redirected.get(uid);
        if (redirected && (earlier?.ip !== sandbox.ip || earlier.restarts !== sandbox.restarts))
          this.redirected.set(uid, { ...sandbox, at: Date.now() });
        // Its own app answering (not another pod now at a stale address): it runs without its redirect.
        if (!redirected && answer.startsWith(`${name} `))
          this.report(uid, `meshed pod ${namespace}/${name} Ready, answered by its app: ${answer}`);
        continue;
      }
      // A proxy's answer names no pod: an unmeshed pod is redirected only if it still is a few seconds on.
      if (!redirected) {
        this.redirectedSince.delete(uid);
        continue;
      }
      const since = this.redirectedSince.get(uid) ?? this.now();
      this.redirectedSince.set(uid, since);
      if (this.now() - since >= 5000) this.report(uid, `unmeshed pod ${namespace}/${name} redirected: ${answer}`);
    }
  }

  private report(uid: string, what: string): void {
    if (this.reported.has(uid)) return;
    this.reported.add(uid);
    this.violation(what);
  }
}

/** What still keeps the node from having recovered (empty: recovered). */
export async function notRecovered(cluster: RealCluster): Promise<string[]> {
  const left: string[] = [];
  try {
    const node = await cluster.get<{
      spec: { taints?: Array<{ key: string }> };
      status: { conditions: Array<{ type: string; status: string }> };
    }>("node", nodeName, "--request-timeout=10s");
    if (!node.status.conditions.some((condition) => condition.type === "Ready" && condition.status === "True")) left.push("node not Ready");
    if ((node.spec.taints ?? []).some((taint) => taint.key === startupTaint)) left.push("startup taint on the node");
    // Asked of the agent itself (host network, :9911), not of its pod's status, which may be from before the fault.
    if (!(await agentAnswersReady())) left.push("the agent not ready (/readyz)");
    const client = await cluster.get<SoakPod>("pod", "client", "--request-timeout=10s");
    if (!ready(client) || (await cluster.connect("client", hostPort(client.status.podIP!, 8080))).startsWith("error:")) {
      left.push("the client pod not Ready or not answering");
    }
  } catch (error) {
    return [`the API does not answer: ${(error as Error).message.split("\n")[0]}`];
  }
  if (!chainedTypes().includes("meshcni")) left.push(`meshcni not chained (${chainedTypes().join(",")})`);
  // The load goes on: a pod created in the last seconds is starting as pods do, not held up by the fault.
  const settled = (pod: SoakPod) => !pod.metadata.deletionTimestamp && Date.now() - Date.parse(pod.metadata.creationTimestamp) > startingMs;
  const pods = ((await soakPods(cluster)) ?? []).filter(settled);
  const waiting = pods.filter((pod) => !ready(pod));
  if (waiting.length > 0) left.push(`pods not Ready: ${waiting.map((pod) => `${pod.metadata.namespace}/${pod.metadata.name}`).join(", ")}`);
  if (left.length > 0) return left;
  // The API's Ready may be from before the fault (kubelet has not yet seen its containers die): each pod must answer.
  const answers = await answersFrom(
    cluster,
    pods.map((pod) => pod.status.podIP!),
  );
  for (const pod of pods) {
    const answer = answers.get(pod.status.podIP!)!;
    // The load deletes pods all along: one deleted since the list (its containers stopping) is not the fault's.
    if (answer.startsWith("error:") && !(await goneOrLeaving(cluster, pod)))
      left.push(`${pod.metadata.namespace}/${pod.metadata.name} not answering: ${answer.split("\n")[0]}`);
  }
  return left;
}

/**
 * `meshcni audit`'s verdicts against real TCP: protected or adopted while its own app
 * answered, or missing while its proxy did, at two audits in a row (one may fall between a
 * change and its record: a move, a repair), is a violation, said once per pod. Drifted
 * claims nothing about inbound (an outbound rule may be what differs); unknown, nothing.
 */
export class AuditAgreement {
  private readonly disagreed = new Map<string, number>();
  private readonly reported = new Set<string>();
  audits = 0;

  compare(audited: AuditedPod[], answered: ReadonlyMap<string, "proxy" | "app">): string[] {
    this.audits++;
    const found: string[] = [];
    for (const pod of audited) {
      const heard = answered.get(pod.uid);
      const claims = pod.status === "protected" || pod.status === "adopted" ? "proxy" : pod.status === "missing" ? "app" : undefined;
      if (!heard || !claims || claims === heard) {
        this.disagreed.delete(pod.uid);
        continue;
      }
      const times = (this.disagreed.get(pod.uid) ?? 0) + 1;
      this.disagreed.set(pod.uid, times);
      if (times < 2 || this.reported.has(pod.uid)) continue;
      this.reported.add(pod.uid);
      found.push(
        `meshcni audit said ${pod.namespace}/${pod.name} ${pod.status} (${pod.details.join("; ")}) while its ${heard} answered, twice in a row`,
      );
    }
    return found;
  }
}

/** Whether a pod is gone or being deleted now (a pod the API cannot say of counts as neither). */
async function goneOrLeaving(cluster: RealCluster, pod: SoakPod): Promise<boolean> {
  const listed = await cluster
    .get<{ items: SoakPod[] }>(
      "pods",
      "-n",
      pod.metadata.namespace,
      "--field-selector",
      `metadata.name=${pod.metadata.name}`,
      "--request-timeout=10s",
    )
    .catch(() => undefined);
  if (!listed) return false;
  const now = listed.items[0];
  return !now || now.metadata.uid !== pod.metadata.uid || Boolean(now.metadata.deletionTimestamp);
}
