import * as v from "valibot";
import { attachmentSchema, decidedPodSchema, decidedSettingsSchema, netnsIdSchema } from "../agent-schema.js";
import { nonNegativeInteger } from "../schema.js";
import { rulePlanSchema } from "../state/plan-schema.js";

/**
 * What the agent asks its writer (`meshcni apply`, a child it keeps running) and what the
 * writer answers: one JSON line each on the child's stdin and stdout, in order. The agent
 * decides; the writer carries out ADD's decision or DEL with the plugin's own code
 * (plugin/apply.ts, plugin/del.ts), in the netns the plugin opened and nowhere else.
 */

const target = v.object(attachmentSchema);
const common = {
  id: v.pipe(v.number(), v.integer()),
  /** Where the host's / is in the writer's mount namespace ("" when it runs on the host). */
  hostRoot: v.string(),
  target,
};

const writeRequestSchemas = [
  v.object({
    ...common,
    verb: v.literal("ADD"),
    netnsId: netnsIdSchema,
    pod: decidedPodSchema,
    plans: v.array(rulePlanSchema),
    settings: decidedSettingsSchema,
  }),
  v.pipe(
    v.object({
      ...common,
      verb: v.literal("DEL"),
      /** Absent only with no netns named: the plugin found none (DEL's may be gone); only the record is removed. */
      netnsId: v.optional(netnsIdSchema),
      netconf: v.string(),
      /** The agent's own entry's proxy ports: a netns where one is listened on still runs its pod (its proxy), and keeps its redirect. */
      proxyPorts: v.array(v.pipe(v.number(), v.integer())),
    }),
    // Without the identity of the netns the plugin saw, the writer could take another for it.
    v.check((del) => del.target.netns === "" || del.netnsId !== undefined, "a DEL naming a netns must carry its identity (netnsId)"),
  ),
] as const;
const writeRequestSchema = v.variant("verb", writeRequestSchemas);

/**
 * Not a write: how each netns at these paths (the runtime's, named by the pods' last sweep) is
 * now, answered `looked` in order (audit/netns-look.ts). The agent skips an idle node's sweep
 * when nothing in them moved.
 */
const lookRequestSchema = v.object({
  id: v.pipe(v.number(), v.integer()),
  hostRoot: v.string(),
  verb: v.literal("LOOK"),
  netns: v.array(v.string()),
});

const writeReplySchema = v.union([
  v.object({ id: v.pipe(v.number(), v.integer()), done: v.literal(true) }),
  v.object({ id: v.pipe(v.number(), v.integer()), failed: v.string() }),
  v.object({
    id: v.pipe(v.number(), v.integer()),
    looked: v.array(v.object({ identity: v.optional(v.string()), generation: v.optional(nonNegativeInteger) })),
  }),
]);

export type WriteRequest = v.InferOutput<typeof writeRequestSchema>;
export type LookRequest = v.InferOutput<typeof lookRequestSchema>;
export type WriteReply = v.InferOutput<typeof writeReplySchema>;
/** A request as the agent makes it; its id is the writer process's to give. */
export type WriteAsk = WriteRequest extends infer R ? (R extends unknown ? Omit<R, "id"> : never) : never;

const writerRequestSchema = v.variant("verb", [...writeRequestSchemas, lookRequestSchema]);

export function parseWriteRequest(line: string): WriteRequest | LookRequest {
  return v.parse(writerRequestSchema, JSON.parse(line));
}

export function parseWriteReply(line: string): WriteReply {
  return v.parse(writeReplySchema, JSON.parse(line));
}
