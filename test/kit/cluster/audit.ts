import { existsSync, readFileSync } from "node:fs";
import { paths } from "./layout.js";

/** One request as kube-apiserver's audit log records it (Metadata level, ResponseComplete or ResponseStarted). */
export interface AuditEvent {
  stage: string;
  verb: string;
  requestURI: string;
  user: { username: string; extra?: Record<string, string[]> };
  userAgent?: string;
  objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string };
  responseStatus?: { code?: number; message?: string; reason?: string };
  requestReceivedTimestamp: string;
}

/** The agent's ServiceAccount's username. */
export const agentUser = (namespace = "meshcni", name = "meshcni") => `system:serviceaccount:${namespace}:${name}`;

/**
 * The requests the API server logged, each once (a watch is logged when its response
 * starts, then again when it completes: the first is kept), by this user when given.
 */
export function auditEvents(username?: string): AuditEvent[] {
  if (!existsSync(paths.auditLog)) return [];
  return readFileSync(paths.auditLog, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as AuditEvent)
    .filter((event) => event.stage !== "ResponseComplete" || event.verb !== "watch")
    .filter((event) => username === undefined || event.user.username === username);
}

/** A short form for assertions and failure messages: "create pods/eviction 429". */
export const describeRequest = (event: AuditEvent) =>
  `${event.verb} ${event.objectRef?.resource ?? event.requestURI}${event.objectRef?.subresource ? `/${event.objectRef.subresource}` : ""} ${event.responseStatus?.code ?? ""}`.trim();

/** The node a request's ServiceAccount token is bound to (a pod's token names its pod's node), if any: which node's agent asked. */
export const requestNode = (event: AuditEvent) => event.user.extra?.["authentication.kubernetes.io/node-name"]?.[0];
