import * as v from "valibot";
import type { AgentAnswer, AgentAsk } from "./agent-socket.js";
import { logLevels } from "./log.js";
import { iptablesModes } from "./redirect/redirector.js";
import { nonNegativeInteger } from "./schema.js";
import { rulePlanSchema } from "./state/plan-schema.js";

/** The schemas of what goes over the agent's socket (agent-socket.ts), as the agent checks questions and the plugin rich answers. */

const name = v.pipe(v.string(), v.minLength(1), v.maxLength(253));
const inode = nonNegativeInteger;
/** A netns file's identity (netns/enter.ts NetnsId). */
export const netnsIdSchema = v.object({ dev: inode, ino: inode });
/** The pod a decision is for, as its record names it. */
export const decidedPodSchema = v.object({ namespace: v.string(), name: v.string(), uid: v.string() });
/** What applying a decision needs of the netconf (DecidedSettings). */
export const decidedSettingsSchema = v.object({
  stateDir: v.pipe(v.string(), v.minLength(1)),
  mode: v.picklist(iptablesModes),
  wait: v.boolean(),
  simulate: v.boolean(),
  logLevel: v.picklist(logLevels),
  logFile: v.exactOptional(v.string()),
});
/** The runtime's names for an attachment. */
export const attachmentSchema = {
  containerId: v.pipe(v.string(), v.minLength(1)),
  ifname: v.pipe(v.string(), v.minLength(1)),
  netns: v.string(),
};

const askSchema = v.variant("get", [
  v.object({ get: v.literal("pod"), namespace: name, name, uid: v.optional(v.string()) }),
  v.object({ get: v.literal("namespace"), name }),
  v.object({ get: v.literal("service"), namespace: name, name }),
  v.object({
    get: v.literal("decision"),
    netconf: v.string(),
    namespace: name,
    name,
    uid: v.optional(v.string()),
    apply: v.optional(v.object({ ...attachmentSchema, netns: v.pipe(v.string(), v.minLength(1)) })),
  }),
  v.object({ get: v.literal("del"), netconf: v.string(), ...attachmentSchema }),
]);

const answerSchema = v.union([
  v.object({ object: v.unknown(), cached: v.boolean() }),
  v.object({
    decided: v.object({
      result: v.record(v.string(), v.unknown()),
      pod: decidedPodSchema,
      plans: v.array(rulePlanSchema),
      settings: decidedSettingsSchema,
    }),
  }),
  v.object({ applied: v.object({ result: v.exactOptional(v.record(v.string(), v.unknown())) }) }),
  v.object({ refused: v.object({ code: v.pipe(v.number(), v.integer(), v.minValue(1)), msg: v.string(), details: v.string() }) }),
  v.object({ gone: v.string() }),
  v.object({ error: v.string() }),
]);

export function parseAsk(line: string): AgentAsk {
  return v.parse(askSchema, JSON.parse(line)) as AgentAsk;
}

export function checkAnswer(value: unknown): AgentAnswer {
  return v.parse(answerSchema, value) as AgentAnswer;
}
