import type { ServerResponse } from "node:http";
import { type KubeObject, status } from "./watch-hub.js";

/** One request as the routes see it: who sent it (admin, agent, a ServiceAccount) and what it asks. */
export interface ApiRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  body: unknown;
  res: ServerResponse;
  who: string;
  contentType: string;
}

/** What the server answers: a status code and a JSON body. */
export interface Reply {
  code: number;
  body: unknown;
}

/** A success: the object, 200 unless said. */
export const ok = (object: unknown, code = 200): Reply => ({ code, body: object });

/** A Kubernetes Status object for a failed request. */
export function failure(code: number, reason: string, message: string, extra: Record<string, unknown> = {}): Reply {
  return { code, body: status(code, reason, message, extra) };
}

/** RFC 7386 JSON merge patch. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (typeof patch !== "object" || patch === null || Array.isArray(patch)) return patch;
  const result: Record<string, unknown> =
    typeof target === "object" && target !== null && !Array.isArray(target) ? { ...(target as object) } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

/** A strategic merge patch of a Node's status, as the server applies it: conditions merged by type, the rest merged. */
export function nodeStatusPatch(node: KubeObject, patch: { status?: { conditions?: Array<{ type: string }> } }): KubeObject {
  const conditions = [
    ...(((node.status as { conditions?: Array<{ type: string }> } | undefined)?.conditions ?? []) as Array<{ type: string }>),
  ];
  for (const condition of patch.status?.conditions ?? []) {
    const at = conditions.findIndex((held) => held.type === condition.type);
    if (at >= 0) conditions[at] = mergePatch(conditions[at], condition) as { type: string };
    else conditions.push(condition);
  }
  const { conditions: _, ...rest } = patch.status ?? {};
  return mergePatch(node, { status: { ...rest, conditions } }) as KubeObject;
}

/** RFC 6902 JSON patch, for the ops the agent sends (test, add, replace, remove on object paths). */
export function jsonPatch(target: KubeObject, ops: Array<{ op: string; path: string; value?: unknown }>): KubeObject | string {
  const result = structuredClone(target) as Record<string, unknown>;
  for (const { op, path, value } of ops) {
    const keys = path
      .split("/")
      .slice(1)
      .map((key) => key.replace(/~1/g, "/").replace(/~0/g, "~"));
    const last = keys.pop()!;
    let parent: Record<string, unknown> = result;
    for (const key of keys) {
      parent[key] ??= {};
      parent = parent[key] as Record<string, unknown>;
    }
    // kube-apiserver answers a failed test with a bare 422 Invalid, its generic message and no details.
    if (op === "test" && JSON.stringify(parent[last]) !== JSON.stringify(value))
      return "the server rejected our request due to an error in our request";
    if (op === "add" || op === "replace") parent[last] = value;
    if (op === "remove") delete parent[last];
  }
  return result as KubeObject;
}
