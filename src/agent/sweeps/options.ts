import type { SweepRequest } from "../../audit/contract.js";
import type { RepairPolicy } from "../../audit/repair.js";
import type { PodKey } from "../../pod-key.js";
import type { AddsWritten } from "./adds-written.js";
import type { LookAtNetns } from "./unchanged.js";

/** How the agent audits and repairs the node's meshed pods (its sweeps). */
export interface SweepOptions {
  repair: RepairPolicy;
  maxEvictionsPerMinute: number;
  excludeNamespaces: string[];
  /** With evict: the only namespaces it evicts in; undefined: any (the node-scope policy keeps it out of the system ones). */
  evictNamespaces: string[] | undefined;
  auditSeconds: number;
  /** Where the runtime keeps pod netns, as the host sees them. */
  netnsDirs: string[];
  /** The container runtime's CRI socket on the host (a path, "auto" or "": see meshcni audit --cri-socket). */
  criSocket: string;
}

/** What the agent's sweeps run with: the binary, the node, its credentials, the dirs, the policy, and the caches' view. */
export interface MonitorOptions {
  /** The meshcni binary whose `sweep` runs each pass. */
  binary: string;
  node: string;
  /** The agent's own kubeconfig, handed to each sweep on stdin (it is never written to the host). */
  credentials: () => string | undefined;
  /** The agent's own pod: no sweep acts on it. */
  self: PodKey | undefined;
  dirs: SweepRequest["dirs"];
  /** The agent's own meshcni entry as it chains it now (undefined when invalid): what every pod's plan comes from. */
  entry: () => SweepRequest["entry"];
  sweep: SweepOptions;
  /** The node as the agent's caches hold it, while they are fresh: the sweep then reads no pod or namespace from the API. */
  view: () => Promise<SweepRequest["view"]>;
  /** Whether the pods' cache holds the node (its first sweep waits for it, a few seconds at most). */
  holdsNode: () => boolean;
  /** The pods whose ADD the agent's writers carried out: an event that leaves one as written starts no sweep. */
  written?: Pick<AddsWritten, "covers">;
  /** How pods' netns are now, asked of the agent's writers (none: every full sweep runs its process). */
  look?: LookAtNetns;
}
