import * as v from "valibot";

/**
 * What the plugin and the agent say over the agent's unix socket: one JSON line asked, one
 * answered, as often as the plugin asks on one connection. The agent answers from its
 * watches of the node's pods and of namespaces, else from the API, with the object as the
 * API shapes it (only what the decision reads).
 */
export type AgentAsk =
  | { get: "pod"; namespace: string; name: string; uid?: string }
  | { get: "namespace"; name: string }
  | { get: "service"; namespace: string; name: string };

export type AgentAnswer = { object: unknown; cached: boolean } | { error: string };

const name = v.pipe(v.string(), v.minLength(1), v.maxLength(253));
const askSchema = v.variant("get", [
  v.object({ get: v.literal("pod"), namespace: name, name, uid: v.optional(v.string()) }),
  v.object({ get: v.literal("namespace"), name }),
  v.object({ get: v.literal("service"), namespace: name, name }),
]);
const answerSchema = v.union([v.object({ object: v.unknown(), cached: v.boolean() }), v.object({ error: v.string() })]);

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
    reason: string,
  ) {
    super(`the agent at ${socket} did not answer: ${reason}`);
    this.name = "AgentUnavailableError";
  }
}
