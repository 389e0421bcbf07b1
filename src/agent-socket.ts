import type { LogLevel } from "./log.js";
import type { RulePlan } from "./redirect/plan.js";
import type { IptablesMode } from "./redirect/redirector.js";

/**
 * What the plugin and the agent say over the agent's unix socket: one JSON line asked, one
 * answered, as often as the plugin asks on one connection. The agent answers from its
 * watches of the node's pods and of namespaces, else from the API, with the object as the
 * API shapes it (only what the decision reads).
 */
export type AgentAsk =
  | { get: "pod"; namespace: string; name: string; uid?: string }
  | { get: "namespace"; name: string }
  | { get: "service"; namespace: string; name: string }
  | DecideAsk
  | RemoveAsk;

/**
 * Where the plugin's attachment is, for the agent to write to: the runtime's names. The
 * netns itself comes with the question as the descriptor the plugin opened (SCM_RIGHTS,
 * kube/verified-connector.ts): the agent writes only into that one, and only where `netns`
 * names it too.
 */
export interface AttachmentAsk {
  containerId: string;
  ifname: string;
  netns: string;
}

/**
 * ADD's whole decision, asked of the agent: the netconf as the runtime gave it and the pod.
 * The agent parses and checks the netconf, reads the pod (and what it needs) and plans the
 * rules with the same code the plugin would, so the plugin loads none of it.
 */
export interface DecideAsk {
  get: "decision";
  netconf: string;
  namespace: string;
  name: string;
  uid?: string;
  /** Also write the decision into this attachment (records and rules), as the plugin would: the answer is then `applied`. */
  apply?: Required<AttachmentAsk>;
}

/** DEL, asked of the agent: remove the attachment's redirect and record as the plugin's DEL would. */
export interface RemoveAsk extends AttachmentAsk {
  get: "del";
  netconf: string;
}

/** What the plugin needs of its netconf to apply a decision, as the agent parsed it. */
export interface DecidedSettings {
  stateDir: string;
  mode: IptablesMode;
  wait: boolean;
  simulate: boolean;
  logLevel: LogLevel;
  logFile?: string;
}

/** The decision: the result to print, and the plans to apply (none: the pod is not meshed). */
export interface Decided {
  result: Record<string, unknown>;
  /** The pod as the agent read it: its record's name. */
  pod: { namespace: string; name: string; uid: string };
  plans: RulePlan[];
  settings: DecidedSettings;
}

export type AgentAnswer =
  | { object: unknown; cached: boolean }
  | { decided: Decided }
  /** The agent did the verb's work itself (rules, records, log lines): the result to print (DEL: none). */
  | { applied: { result?: Record<string, unknown> } }
  /** The netconf or the pod fails the decision: the CNI error the plugin would have given. */
  | { refused: { code: number; msg: string; details: string } }
  /**
   * The pod asked for does not exist: the API said 404, or the agent's watch saw that very pod
   * (its UID) deleted, which is final. The plugin fails as the API's 404 would have it fail,
   * asking nobody again.
   */
  | { gone: string }
  | { error: string };

/** An answer is at most this long: pods' decision fields are a few KiB (their annotations at most 256 KiB). */
export const maxLineBytes = 1 << 20;

/**
 * A question is at most this long: a netconf with its prevResult is a few KiB. The agent
 * holds no more of one, so a crowd of callers cannot make it hold much (issue 41); the plugin
 * does a longer one's work itself.
 */
export const maxAskBytes = 64 << 10;

/** The agent's word that the pod asked for does not exist (a `gone` answer): no reason to ask the API instead. */
export class PodGoneError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = "PodGoneError";
  }
}

/** The agent could not be asked (no socket, nobody listening, too slow, an answer that is no answer): ask the API instead. */
export class AgentUnavailableError extends Error {
  constructor(
    readonly socket: string,
    readonly reason: string,
  ) {
    super(`the agent at ${socket} did not answer: ${reason}`);
    this.name = "AgentUnavailableError";
  }
}
