import { type ApiRequest, failure, mergePatch, ok, type Reply } from "./replies.js";
import type { FakeApiServer } from "./server.js";
import type { KubeObject } from "./watch-hub.js";

/**
 * Pods and Events as kube-apiserver serves them to meshcni: the node's pods listed and
 * watched by spec.nodeName (and equality label selectors), a pod read, merge-patched
 * (through admission) or deleted gracefully, evicted (PodDisruptionBudgets and API
 * Priority and Fairness refusing as a test sets), Events listed and created. null: not
 * a pods or events request.
 */
export function podRoutes(server: FakeApiServer, { method, path, query, body, res, who }: ApiRequest): Reply | undefined | null {
  if (path === "/api/v1/pods" && method === "GET") {
    const nodeName = /(?:^|,)spec\.nodeName=([^,]+)/.exec(query.fieldSelector ?? "")?.[1];
    // Equality selectors only (key=value, comma-separated), as meshcni sends them.
    const labels = (query.labelSelector ?? "")
      .split(",")
      .filter(Boolean)
      .map((term) => term.split("=") as [string, string]);
    const onNode = (pod: KubeObject) =>
      (nodeName === undefined || (pod.spec as { nodeName?: string } | undefined)?.nodeName === nodeName) &&
      labels.every(([key, value]) => (pod.metadata?.labels as Record<string, string> | undefined)?.[key] === value);
    if (query.watch === "true") return server.watch("Pod", path, query, res, onNode);
    return server.page("PodList", [...server.pods.values()].filter(onNode), query);
  }
  if (path === "/api/v1/events" && method === "GET") {
    const fields = Object.fromEntries(
      (query.fieldSelector ?? "")
        .split(",")
        .filter(Boolean)
        .map((term) => term.split("=")),
    );
    const value = (event: KubeObject, field: string): unknown =>
      field.split(".").reduce<unknown>((at, key) => (at as Record<string, unknown> | undefined)?.[key], event);
    return server.page(
      "EventList",
      server.events.filter((event) => Object.entries(fields).every(([field, wanted]) => value(event, field) === wanted)),
      query,
    );
  }
  const pod = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)$/.exec(path);
  if (pod) {
    const key = `${pod[1]}/${pod[2]}`;
    const found = server.pods.get(key);
    if (!found) return failure(404, "NotFound", `pods "${pod[2]}" not found`);
    if (method === "GET") return ok(found);
    if (method === "PATCH") {
      const denied = server.admission(who, "UPDATE", "pods", "", mergePatch(found, body) as KubeObject, found);
      if (denied) return denied;
      const patched = server.stamp(mergePatch(found, body) as KubeObject);
      server.pods.set(key, patched);
      server.notify("MODIFIED", patched);
      return ok(patched);
    }
    if (method === "DELETE") {
      const options = body as { preconditions?: { uid?: string }; gracePeriodSeconds?: number } | undefined;
      const uid = options?.preconditions?.uid;
      if (uid && uid !== (found.metadata as { uid?: string }).uid) return failure(409, "Conflict", "precondition failed: UID");
      return ok(server.deleteGracefully(pod[1]!, pod[2]!, options?.gracePeriodSeconds));
    }
  }
  const eviction = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/eviction$/.exec(path);
  if (eviction && method === "POST") {
    const key = `${eviction[1]}/${eviction[2]}`;
    const found = server.pods.get(key);
    if (!found) return failure(404, "NotFound", `pods "${eviction[2]}" not found`);
    const denied = server.admission(who, "CREATE", "pods", "eviction", body as KubeObject, null);
    if (denied) return denied;
    if (server.disruptionBudgetBlocks.has(key))
      return failure(429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.", {
        details: {
          causes: [{ reason: "DisruptionBudget", message: "The disruption budget guarded-pdb needs 1 healthy pods and has 1 currently" }],
        },
      });
    const refusal = server.evictionRefusals.get(key);
    if (refusal === "several-budgets")
      return failure(
        500,
        "InternalError",
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
      );
    if (refusal === "throttled") {
      res.setHeader("retry-after", "2");
      return failure(429, "TooManyRequests", "Too many requests, please try again later.");
    }
    const options = (body as { deleteOptions?: { preconditions?: { uid?: string }; gracePeriodSeconds?: number } } | undefined)
      ?.deleteOptions;
    const uid = options?.preconditions?.uid;
    if (uid && uid !== (found.metadata as { uid?: string }).uid) return failure(409, "Conflict", "precondition failed: UID");
    server.deleteGracefully(eviction[1]!, eviction[2]!, options?.gracePeriodSeconds);
    return ok({ kind: "Status", apiVersion: "v1", status: "Success" }, 201);
  }
  const events = /^\/api\/v1\/namespaces\/([^/]+)\/events$/.exec(path);
  if (events && method === "POST") {
    const denied = server.admission(who, "CREATE", "events", "", { ...(body as KubeObject), metadata: { namespace: events[1]! } }, null);
    if (denied) return denied;
    const event = server.stamp(
      mergePatch(body, { metadata: { name: `event-${server.events.length}`, namespace: events[1] } }) as KubeObject,
    );
    server.events.push(event);
    return ok(event, 201);
  }
  return null;
}
