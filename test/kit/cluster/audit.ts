import { existsSync, readdirSync, readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
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
 * The audit log's files, oldest first: the API server rotates it every 100 MB (its
 * --audit-log-maxsize default), keeping each full one beside it as audit-<time>.log.
 */
export function auditLogFiles(dir = dirname(paths.auditLog)): string[] {
  const name = basename(paths.auditLog, ".log");
  if (!existsSync(dir)) return [];
  // "audit-<time>.log" sorts before "audit.log" ('-' before '.'), and the times in order.
  return readdirSync(dir)
    .filter((file) => file === `${name}.log` || (file.startsWith(`${name}-`) && file.endsWith(".log")))
    .sort()
    .map((file) => join(dir, file));
}

/**
 * The requests the API server logged, each once (a watch is logged when its response
 * starts, then again when it completes: the first is kept), by this user when given;
 * from every file of the log (a soak's run fills many), one at a time.
 */
export function auditEvents(username?: string): AuditEvent[] {
  return auditLogFiles().flatMap((file) =>
    readFileSync(file, "utf8")
      .split("\n")
      .filter((line) => line !== "" && (username === undefined || line.includes(`"username":${JSON.stringify(username)}`)))
      .map((line) => JSON.parse(line) as AuditEvent)
      .filter((event) => event.stage !== "ResponseComplete" || event.verb !== "watch")
      .filter((event) => username === undefined || event.user.username === username),
  );
}

/** A short form for assertions and failure messages: "create pods/eviction 429". */
export const describeRequest = (event: AuditEvent) =>
  `${event.verb} ${event.objectRef?.resource ?? event.requestURI}${event.objectRef?.subresource ? `/${event.objectRef.subresource}` : ""} ${event.responseStatus?.code ?? ""}`.trim();

/** The node a request's ServiceAccount token is bound to (a pod's token names its pod's node), if any: which node's agent asked. */
export const requestNode = (event: AuditEvent) => event.user.extra?.["authentication.kubernetes.io/node-name"]?.[0];
