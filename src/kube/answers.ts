import type { V1Namespace, V1Pod, V1Service } from "@kubernetes/client-node";
import * as v from "valibot";
import { isJsonObject } from "../json.js";
import { describeIssuePath } from "../schema.js";

/** The API server's answer is not the object asked for: it must not be acted on, and retrying will not change it. */
export class AnswerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "AnswerError";
  }
}

const stringMap = v.optional(v.record(v.string(), v.string()));
const metadata = v.looseObject({
  name: v.string(),
  namespace: v.optional(v.string()),
  uid: v.optional(v.string()),
  labels: stringMap,
  annotations: stringMap,
});
const containers = v.array(v.looseObject({ name: v.string() }));

/** What the plugin reads of a Pod: enough of its shape that a malformed answer cannot pass for an unmeshed pod. */
const podSchema = v.looseObject({
  kind: v.literal("Pod"),
  metadata,
  spec: v.looseObject({ containers: v.pipe(containers, v.minLength(1)), initContainers: v.optional(containers) }),
});
const namespaceSchema = v.looseObject({ kind: v.literal("Namespace"), metadata });
const serviceSchema = v.looseObject({
  kind: v.literal("Service"),
  metadata,
  spec: v.looseObject({
    ports: v.optional(v.array(v.looseObject({ port: v.number(), targetPort: v.optional(v.union([v.number(), v.string()])) }))),
  }),
});

function describe(body: unknown): string {
  if (body === null) return "null";
  if (Array.isArray(body)) return "an array";
  if (typeof body !== "object") return `a ${typeof body}`;
  const { kind, message } = body as { kind?: unknown; message?: unknown };
  if (kind === "Status") return `a Status${typeof message === "string" ? ` (${JSON.stringify(message.slice(0, 200))})` : ""}`;
  return kind === undefined ? "an object without a kind" : `a ${JSON.stringify(kind)}`;
}

function check<S extends v.GenericSchema>(
  schema: S,
  body: unknown,
  kind: string,
  wanted: string,
  name: (out: v.InferOutput<S>) => string,
): v.InferOutput<S> {
  if (!isJsonObject(body) || body.kind !== kind) {
    throw new AnswerError(`the API server answered with ${describe(body)}, not the ${kind} ${wanted}`);
  }
  const parsed = v.safeParse(schema, body);
  if (!parsed.success) {
    const issue = parsed.issues[0];
    throw new AnswerError(`the API server's ${kind} ${wanted} is malformed: ${describeIssuePath(issue)}: ${issue.message}`);
  }
  const found = name(parsed.output);
  if (found !== wanted) throw new AnswerError(`the API server answered with ${kind} ${found}, not ${wanted}`);
  return parsed.output;
}

/** The answer to GET pod namespace/name, checked to be that Pod. */
export function podAnswer(body: unknown, namespace: string, name: string): V1Pod {
  return check(podSchema, body, "Pod", `${namespace}/${name}`, (pod) => `${pod.metadata.namespace ?? ""}/${pod.metadata.name}`) as V1Pod;
}

/** The answer to GET service namespace/name, checked to be that Service (its ports numbers). */
export function serviceAnswer(body: unknown, namespace: string, name: string): V1Service {
  return check(
    serviceSchema,
    body,
    "Service",
    `${namespace}/${name}`,
    (service) => `${service.metadata.namespace ?? ""}/${service.metadata.name}`,
  ) as V1Service;
}

/** The answer to GET namespace name, checked to be that Namespace. */
export function namespaceAnswer(body: unknown, name: string): V1Namespace {
  return check(namespaceSchema, body, "Namespace", name, (namespace) => namespace.metadata.name) as V1Namespace;
}
