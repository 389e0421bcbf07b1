import * as v from "valibot";
import { backends } from "../redirect/redirector.js";
import { describeIssuePath, issueMessage, nonNegativeInteger } from "../schema.js";
import { podStatuses } from "./classify.js";
import { seenNetnsEntries } from "./netns-reading.js";
import { repairPolicies } from "./repair.js";

/**
 * What a sweep is asked and what it answers, as one contract for every caller: the agent
 * sends a request on its sweep child's stdin (with its own kubeconfig beside it, never on
 * the host's disk) and reads the report from its stdout; `meshcni audit` maps its flags
 * to the same request. Each side checks what it receives against these schemas.
 */

const podKey = v.object({ namespace: v.string(), name: v.string() });
const count = nonNegativeInteger;

const sweepRequestSchema = v.object({
  node: v.pipe(v.string(), v.minLength(1)),
  /** Only these pods (`namespace/name`); every meshed pod of the node when empty. */
  pods: v.array(v.string()),
  /** Absent: audit only, change nothing. */
  policy: v.optional(v.picklist(repairPolicies)),
  limits: v.object({
    /** Namespaces whose pods are never acted on. */
    excludeNamespaces: v.array(v.string()),
    /** With evict: the only namespaces it evicts in (absent: any). */
    evictNamespaces: v.optional(v.array(v.string())),
    /** Pods acted on recently (by earlier sweeps): reported, left alone. */
    skipUids: v.array(v.string()),
    evictionsLeft: count,
    /** When the caller acts on a pod again (the agent: 10 minutes), for the Events' words; absent for a sweep by hand. */
    retryMinutes: v.optional(v.pipe(v.number(), v.minValue(1))),
  }),
  /** The agent's own pod, never acted on. */
  self: v.optional(podKey),
  /**
   * The agent's own meshcni entry, as it chains it: the netconf every pod is held to. Absent
   * (a sweep by hand): meshcni's entry in the active config.
   */
  entry: v.optional(v.record(v.string(), v.unknown())),
  /**
   * The node as the agent's caches hold it (fresh): every pod of the node and the
   * namespaces they are in, with what a sweep reads of them. With it the sweep reads no pod
   * or namespace from the API; without it (a sweep by hand, a cache behind) it lists them.
   */
  view: v.optional(
    v.object({
      pods: v.array(v.looseObject({ metadata: v.looseObject({ name: v.string(), namespace: v.string(), uid: v.string() }) })),
      namespaces: v.array(v.looseObject({ metadata: v.looseObject({ name: v.string() }) })),
    }),
  ),
  /**
   * Whether to ask the container runtime which sandboxes it still has, so records of those
   * gone are removed (absent: yes). The agent asks every 10 minutes: each question loads the
   * CRI client into the sweep's process.
   */
  sandboxes: v.optional(v.boolean()),
  /** Pods' netns as the last sweep of each read them clean (by UID): read again only if their nf_tables generation moved. */
  seen: v.optional(v.array(v.object({ uid: v.string(), ...seenNetnsEntries }))),
  /** Host paths as the host names them, and where the host's / is mounted. */
  dirs: v.object({
    hostRoot: v.string(),
    stateDir: v.string(),
    netDir: v.string(),
    netnsDirs: v.array(v.string()),
    /** The container runtime's CRI socket on the host: a path, "auto" (the first well-known one there), or "" (none). */
    criSocket: v.string(),
  }),
});

export type SweepRequest = v.InferOutput<typeof sweepRequestSchema>;

/** The agent's sweep child's stdin: the request and the agent's credentials. */
const sweepInputSchema = v.object({ kubeconfig: v.pipe(v.string(), v.minLength(1)), request: sweepRequestSchema });

export type SweepInput = v.InferOutput<typeof sweepInputSchema>;

const podReportSchema = v.object({
  namespace: v.string(),
  name: v.string(),
  uid: v.string(),
  status: v.picklist(podStatuses),
  /** Why, for anything but protected: the differences for drifted. */
  details: v.array(v.string()),
  /** What the sweep did about an unprotected pod, and how it went. */
  action: v.optional(v.picklist(repairPolicies)),
  result: v.optional(
    v.union([
      v.picklist(["done", "blocked"]),
      v.object({ throttledMs: count }),
      v.object({ failed: v.string(), permanent: v.optional(v.literal(true)) }),
    ]),
  ),
  /** A protected pod's redirect moved to the node's backend, or the move that failed. */
  moved: v.optional(v.object({ from: v.picklist(backends), to: v.picklist(backends), failed: v.optional(v.string()) })),
  /** Why an unprotected pod was left alone. */
  skipped: v.optional(v.string()),
  /** Why the netns it was found in is not taken as its own (a record the container runtime does not confirm), when that left it alone. */
  unconfirmed: v.optional(v.string()),
  /** Why its Event could not be created. */
  eventFailed: v.optional(v.string()),
  /** Its netns as this sweep read it, found clean (or as the reading it was given, which still held). */
  seen: v.optional(v.object(seenNetnsEntries)),
});

const sweepReportSchema = v.object({
  node: v.string(),
  pods: v.array(podReportSchema),
  summary: v.object({ protected: count, adopted: count, missing: count, drifted: count, unknown: count }),
  /** Records removed because what they described is gone. */
  recordsRemoved: v.object({ podGone: count, netnsGone: count, sandboxGone: count }),
  /** The backend meshcni's entry selects on the node (absent: no plan could be made), and the ADD records by the backend holding their redirect. */
  backends: v.object({ node: v.optional(v.picklist(backends)), records: v.record(v.picklist(backends), count) }),
});

export type PodReport = v.InferOutput<typeof podReportSchema>;
export type SweepReport = v.InferOutput<typeof sweepReportSchema>;

/** Parses JSON text against a schema; throws one line naming `what`, the field and the problem. */
function parseWith<S extends v.GenericSchema>(schema: S, text: string, what: string): v.InferOutput<S> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new Error(`${what} is not JSON: ${(error as Error).message}`);
  }
  const parsed = v.safeParse(schema, json);
  if (parsed.success) return parsed.output;
  const issue = parsed.issues[0];
  throw new Error(`${what} is malformed: ${describeIssuePath(issue) || "(top)"}: ${issueMessage(issue)}`);
}

export const parseSweepInput = (text: string): SweepInput => parseWith(sweepInputSchema, text, "the sweep's input");
export const parseSweepReport = (text: string): SweepReport => parseWith(sweepReportSchema, text, "the sweep's report");
