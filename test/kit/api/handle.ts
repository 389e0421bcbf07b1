import type { IncomingMessage, ServerResponse } from "node:http";
import { clusterRoutes } from "./cluster-routes.js";
import { podRoutes } from "./pod-routes.js";
import { authorizationOf, forbiddenMessage, grantsOf, isDiscovery, permissionOf } from "./rbac.js";
import { type ApiRequest, failure, type Reply } from "./replies.js";
import type { FakeApiServer, MintedToken, RecordedRequest } from "./server.js";

export function handleRequest(server: FakeApiServer, req: IncomingMessage, res: ServerResponse, rawBody: string, connection: string): void {
  const url = new URL(req.url ?? "/", "https://localhost");
  const path = url.pathname;
  const query = Object.fromEntries(url.searchParams);
  const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
  const mintedToken = bearer === undefined ? undefined : server.minted.get(bearer);
  const boundNodeAlive = (bound: MintedToken["boundNode"]) => !bound || server.nodes.get(bound.name)?.metadata?.uid === bound.uid;
  // A ServiceAccount token stands while its account does (kube-apiserver's authenticator looks it up at each request).
  const accountAlive = (account: string) => server.serviceAccounts.has(account);
  const live =
    mintedToken !== undefined &&
    mintedToken.expires > server.now() &&
    boundNodeAlive(mintedToken.boundNode) &&
    accountAlive(mintedToken.serviceAccount);
  const who =
    bearer === server.token
      ? "admin"
      : bearer !== undefined && server.agentTokens.has(bearer) && accountAlive(server.agentUser.username.split(":").slice(2).join("/"))
        ? "agent"
        : live
          ? mintedToken.serviceAccount
          : "anonymous";
  const authorized = who !== "anonymous";
  let body: unknown = rawBody;
  try {
    body = rawBody ? JSON.parse(rawBody) : undefined;
  } catch {
    // kept as text
  }
  const method = req.method ?? "";
  // Its own clock, as its answers' Date says it.
  res.setHeader("date", new Date(server.now()).toUTCString());
  server.requests.push({ method, path, query, authorized, who, body, at: performance.now(), connection });
  if (
    server.throttle &&
    server.now() < server.throttle.until &&
    server.throttle.path.test(path) &&
    !(server.throttle.listsOnly && query.watch === "true")
  ) {
    const { retryAfterSeconds } = server.throttle;
    const throttled = failure(429, "TooManyRequests", "Too many requests, please try again later.");
    res
      .writeHead(429, { "content-type": "application/json", "retry-after": String(retryAfterSeconds) })
      .end(JSON.stringify(throttled.body));
    return;
  }
  if (authorized && server.now() < server.authorizationWarmupUntil) {
    const forbidden = failure(403, "Forbidden", `${path} is forbidden: the authorizer's caches have not synced yet`);
    res.writeHead(403, { "content-type": "application/json" }).end(JSON.stringify(forbidden.body));
    return;
  }
  if (authorized && who !== "admin" && !isDiscovery(method, path)) {
    const serviceAccount = who === "agent" ? agentServiceAccount(server) : who;
    const attributes = authorizationOf(method, path, query);
    if (!server.authorize(serviceAccount, attributes)) {
      const forbidden = failure(
        403,
        "Forbidden",
        forbiddenMessage(`system:serviceaccount:${serviceAccount.replace("/", ":")}`, attributes),
      );
      res.writeHead(403, { "content-type": "application/json" }).end(JSON.stringify(forbidden.body));
      return;
    }
  }
  const fault = server.faults.get(path);
  if (fault && "hang" in fault) {
    server.hanging.add(res);
    return;
  }
  if (authorized && fault && "body" in fault) {
    res.writeHead(200, { "content-type": "application/json" }).end(fault.body);
    return;
  }
  if (authorized && fault && "endless" in fault) {
    endless(res);
    return;
  }
  const reply = !authorized
    ? failure(401, "Unauthorized", "Unauthorized")
    : fault && "status" in fault
      ? failure(fault.status, "InternalError", `injected fault ${fault.status}`)
      : route(server, { method, path, query, body, res, who, contentType: req.headers["content-type"] ?? "" });
  if (reply) res.writeHead(reply.code, { "content-type": "application/json" }).end(JSON.stringify(reply.body));
}

/** A 200 whose body never ends: 1 MiB chunks of a string value, for as long as the client reads. */
function endless(res: ServerResponse): void {
  const chunk = "a".repeat(1 << 20);
  let sent = 0;
  res.writeHead(200, { "content-type": "application/json" });
  res.write('{"kind":"Pod","padding":"');
  const more = () => {
    while (!res.destroyed && sent < 1 << 30 && res.write(chunk)) sent += chunk.length;
  };
  res.on("drain", more);
  more();
}

/**
 * The permissions the roles bound to `who` (a ServiceAccount, or "agent") grant that none of
 * `requests` used, sorted: each one a grant the RBAC could do without, or one only a rarer path uses.
 */
export function unusedGrants(server: FakeApiServer, who: string, requests: RecordedRequest[]): string[] {
  const used = new Set(
    requests
      .filter((request) => request.who === who && !isDiscovery(request.method, request.path))
      .map((request) => permissionOf(authorizationOf(request.method, request.path, request.query))),
  );
  const account = who === "agent" ? agentServiceAccount(server) : who;
  return grantsOf(server.rbac, account)
    .filter((grant) => !used.has(grant))
    .sort();
}

/** The agent's ServiceAccount (`namespace/name`), from the username its tokens authenticate as. */
function agentServiceAccount(server: FakeApiServer): string {
  const [, namespace, name] = /^system:serviceaccount:([^:]+):(.+)$/.exec(server.agentUser.username) ?? [];
  return `${namespace}/${name}`;
}

/** Answers one request from the store; undefined when it took the response over (a watch). */
function route(server: FakeApiServer, request: ApiRequest): Reply | undefined {
  const pods = podRoutes(server, request);
  return pods === null ? clusterRoutes(server, request) : pods;
}
