import type { SweepReport } from "../../audit/contract.js";
import type { Logger } from "../../log.js";
import type { AgentMetrics } from "../metrics.js";

/**
 * Where the node's redirects are, from each full sweep: the backend meshcni's entry selects
 * on the node and the ADD records by the backend holding theirs. Said in the log at the first
 * sweep and whenever it changes (a warning while some are in another backend than the
 * node's: a switch not carried out yet, which the sweeps move), and kept as gauges, so an
 * operator who changed the iptables-mode sees whether it happened.
 */
export class BackendReport {
  private said: string | undefined;

  constructor(
    private readonly log: Logger,
    private readonly metrics: Pick<AgentMetrics, "backends">,
  ) {}

  take({ node, records }: SweepReport["backends"]): void {
    this.metrics.backends.reset();
    for (const [backend, count] of Object.entries(records))
      this.metrics.backends.set({ backend, selected: String(backend === node) }, count);
    const elsewhere =
      node === undefined ? 0 : Object.entries(records).reduce((sum, [backend, count]) => sum + (backend === node ? 0 : count), 0);
    const text = JSON.stringify({ node, records });
    if (text === this.said) return;
    this.said = text;
    const fields = { nodeBackend: node ?? "(not known: no meshed pod to plan for)", records };
    if (elsewhere > 0)
      this.log.warn("some pods' redirects are in another backend than the node's: the sweeps move them", { ...fields, elsewhere });
    else this.log.info("the node's backend, and the backends holding its pods' redirects", fields);
  }
}
