// "No pod evicted or repaired that did not need it": the agent's repairs of the soak's pods
// (their Events) against what the redirect watch saw of each pod's sandbox, and its evictions
// (the API server's audit log): the soak runs the agent with --repair redirect, and no fault
// here takes rules from a running pod, so neither has a cause.
import { agentUser, auditEvents } from "../cluster/audit.js";
import type { RealCluster } from "../cluster/cluster.js";
import { soakNamespaces } from "./workload.js";

/** A meshed pod's sandbox when its proxy first answered there: its IP and its containers' restarts. */
export interface SeenRedirected {
  ip: string;
  restarts: number;
  /** Wall-clock ms. */
  at: number;
}

export interface RepairEvent {
  metadata: { uid: string };
  reason: string;
  involvedObject: { namespace: string; name: string; uid: string };
  firstTimestamp?: string;
  eventTime?: string;
  message: string;
}

export const repairReasons = ["MeshRedirectMissing", "MeshRedirectDrifted"];

/**
 * Repairs of a pod whose proxy had already answered in the sandbox it still runs in (the
 * same IP, no restart since): pure. `now` is each pod's sandbox as listed now.
 */
export function needlessRepairs(
  events: RepairEvent[],
  now: ReadonlyMap<string, { ip: string; restarts: number }>,
  seen: ReadonlyMap<string, SeenRedirected>,
): string[] {
  return events.flatMap((event) => {
    const { uid, namespace, name } = event.involvedObject;
    const [before, current] = [seen.get(uid), now.get(uid)];
    const at = Date.parse(event.eventTime ?? event.firstTimestamp ?? "");
    if (!repairReasons.includes(event.reason) || !before || !current || !(before.at < at)) return [];
    if (before.ip !== current.ip || before.restarts !== current.restarts) return [];
    return [
      `${namespace}/${name} repaired (${event.reason}) at ${new Date(at).toISOString()} although its proxy answered in the same sandbox at ${new Date(before.at).toISOString()}: ${event.message}`,
    ];
  });
}

export class RepairWatch {
  private readonly judged = new Set<string>();
  repairs = 0;

  constructor(private readonly cluster: RealCluster) {}

  /** The needless repairs and the evictions by the agent since the last call, in words; nothing when the API does not answer. */
  async check(
    seen: ReadonlyMap<string, SeenRedirected>,
    sandboxes: () => Promise<Map<string, { ip: string; restarts: number }>>,
    since: string,
  ): Promise<string[]> {
    let events: RepairEvent[];
    try {
      const listed = await this.cluster.get<{ items: RepairEvent[] }>("events", "-A", "--request-timeout=10s");
      events = listed.items.filter(
        (event) =>
          soakNamespaces.includes(event.involvedObject.namespace) &&
          repairReasons.includes(event.reason) &&
          !this.judged.has(event.metadata.uid),
      );
    } catch {
      return [];
    }
    for (const event of events) this.judged.add(event.metadata.uid);
    this.repairs += events.length;
    const evictions = auditEvents(agentUser()).filter(
      (event) =>
        event.requestReceivedTimestamp >= since && event.objectRef?.subresource === "eviction" && !this.judged.has(event.requestURI),
    );
    for (const eviction of evictions) this.judged.add(eviction.requestURI);
    return [
      ...needlessRepairs(events, await sandboxes(), seen),
      ...evictions.map((eviction) => `the agent evicted ${eviction.objectRef?.namespace}/${eviction.objectRef?.name} (--repair redirect)`),
    ];
  }
}
