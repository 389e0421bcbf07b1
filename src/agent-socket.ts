import * as v from "valibot";
import { type LogLevel, logLevels } from "./log.js";
import type { RulePlan } from "./redirect/plan.js";
import { iptablesModes } from "./redirect/redirector.js";
import { rulePlanSchema } from "./state/plan-schema.js";

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
  | DecideAsk;

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
}

/** What the plugin needs of its netconf to apply a decision, as the agent parsed it. */
export interface DecidedSettings {
  stateDir: string;
  mode: (typeof iptablesModes)[number];
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
  /** The netconf or the pod fails the decision: the CNI error the plugin would have given. */
  | { refused: { code: number; msg: string; details: string } }
  | { error: string };

const name = v.pipe(v.string(), v.minLength(1), v.maxLength(253));
const askSchema = v.variant("get", [
  v.object({ get: v.literal("pod"), namespace: name, name, uid: v.optional(v.string()) }),
  v.object({ get: v.literal("namespace"), name }),
  v.object({ get: v.literal("service"), namespace: name, name }),
  v.object({ get: v.literal("decision"), netconf: v.string(), namespace: name, name, uid: v.optional(v.string()) }),
]);
const answerSchema = v.union([
  v.object({ object: v.unknown(), cached: v.boolean() }),
  v.object({
    decided: v.object({
      result: v.record(v.string(), v.unknown()),
      pod: v.object({ namespace: v.string(), name: v.string(), uid: v.string() }),
      plans: v.array(rulePlanSchema),
      settings: v.object({
        stateDir: v.pipe(v.string(), v.minLength(1)),
        mode: v.picklist(iptablesModes),
        wait: v.boolean(),
        simulate: v.boolean(),
        logLevel: v.picklist(logLevels),
        logFile: v.optional(v.string()),
      }),
    }),
  }),
  v.object({ refused: v.object({ code: v.pipe(v.number(), v.integer(), v.minValue(1)), msg: v.string(), details: v.string() }) }),
  v.object({ error: v.string() }),
]);

/** A line is at most this long: pods' decision fields are a few KiB. */
export const maxLineBytes = 1 << 20;

export function parseAsk(line: string): AgentAsk {
  return v.parse(askSchema, JSON.parse(line)) as AgentAsk;
}

export function parseAnswer(line: string): AgentAnswer {
  return v.parse(answerSchema, JSON.parse(line)) as AgentAnswer;
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
