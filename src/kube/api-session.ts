import { createHash } from "node:crypto";
import { type ClientHttp2Session, type ClientHttp2Stream, connect, type IncomingHttpHeaders } from "node:http2";
import type { KubeConfig } from "@kubernetes/client-node";
import { SessionLiveness } from "./session-liveness.js";

/**
 * Where a request goes and as whom: the server's origin, the TLS settings of the
 * kubeconfig's cluster and user, and the headers its credentials give (a bearer token).
 */
export interface ApiEndpoint {
  origin: string;
  tls: { ca?: Buffer; cert?: Buffer; key?: Buffer; rejectUnauthorized?: boolean; servername?: string };
  headers: Record<string, string>;
}

/** An answer's status and headers, with its body still to read (bodyChunks, readBody). */
export interface ApiResponse {
  status: number;
  headers: IncomingHttpHeaders;
  stream: ClientHttp2Stream;
  /** Tells the connection's health check that something came. */
  heard(): void;
}

/** Open sessions by origin and TLS identity: every request and watch of a process to one server shares one connection. */
const sessions = new Map<string, ClientHttp2Session>();
/** The error that ended each session (a refused connection, a bad certificate), which its pending streams report as theirs. */
const sessionFailures = new WeakMap<ClientHttp2Session, Error>();
/** Each session's health check, which also counts its streams: an idle session does not hold a process that has nothing else to do. */
const liveness = new WeakMap<ClientHttp2Session, SessionLiveness>();

/**
 * The target of `config`'s current context, as client-node reads it (a CA, client
 * certificate and token from files or data, an exec plugin's credentials). A kubeconfig
 * that asks for a proxy is refused: this client would not go through it.
 */
export async function apiEndpoint(config: KubeConfig): Promise<ApiEndpoint> {
  const cluster = config.getCurrentCluster();
  if (!cluster) throw new Error("the kubeconfig names no cluster");
  if (cluster.proxyUrl)
    throw new Error(`the kubeconfig's cluster ${cluster.name} asks for a proxy (proxy-url), which meshcni does not support`);
  const origin = new URL(cluster.server);
  if (origin.protocol !== "https:")
    throw new Error(`the kubeconfig's server ${cluster.server} is not https: the API server speaks HTTP/2 over TLS`);
  const options: {
    ca?: Buffer;
    cert?: Buffer;
    key?: Buffer;
    rejectUnauthorized?: boolean;
    servername?: string;
    headers?: Record<string, string>;
  } = {};
  await config.applyToHTTPSOptions(options as never);
  const { ca, cert, key, rejectUnauthorized, servername, headers = {} } = options;
  const basic = (options as { auth?: string }).auth;
  const tls = Object.fromEntries(
    Object.entries({ ca, cert, key, rejectUnauthorized, servername }).filter(([, value]) => value !== undefined),
  );
  return {
    origin: origin.origin,
    tls,
    headers: basic ? { ...headers, authorization: `Basic ${Buffer.from(basic).toString("base64")}` } : headers,
  };
}

/** Hashes what decides which server is trusted and who this client is: a rotated client certificate opens a new connection. */
function identity({ ca, cert, key, rejectUnauthorized, servername }: ApiEndpoint["tls"]): string {
  const hash = createHash("sha256");
  for (const part of [ca, cert, key, String(rejectUnauthorized), servername ?? ""]) hash.update(part ?? "-").update("\0");
  return hash.digest("hex");
}

/** The open session to `target` (one more stream on it), or a new one; a session of the same server with an older identity is closed once its streams end. */
function sessionFor(target: ApiEndpoint): ClientHttp2Session {
  const key = `${target.origin}\0${identity(target.tls)}`;
  const held = sessions.get(key);
  if (held && !held.closed && !held.destroyed) return held;
  for (const [otherKey, other] of sessions)
    if (otherKey.startsWith(`${target.origin}\0`)) {
      sessions.delete(otherKey);
      other.close();
    }
  const session = connect(target.origin, target.tls);
  const forget = () => {
    if (sessions.get(key) === session) sessions.delete(key);
  };
  session.on("error", (error: Error) => {
    sessionFailures.set(session, error);
    forget();
  });
  // A GOAWAY (a restarting or rebalancing server) lets the streams open on it finish; new requests open a new connection.
  session.on("goaway", forget);
  session.on("close", forget);
  liveness.set(session, new SessionLiveness(session));
  sessions.set(key, session);
  return session;
}

/**
 * Sends a request to `target` and resolves with the answer's status and headers once they
 * come; its body is then read from the stream. `signal` aborts it at any point. A request
 * whose connection failed rejects with the connection's error (ECONNREFUSED, a certificate
 * the CA does not sign), not the stream's cancellation.
 */
export function apiRequest(
  target: ApiEndpoint,
  request: { method: string; path: string; headers?: Record<string, string>; body?: string | Buffer; signal?: AbortSignal | undefined },
): Promise<ApiResponse> {
  const session = sessionFor(target);
  const headers = { ...lowerCased({ ...target.headers, ...request.headers }), ":method": request.method, ":path": request.path };
  const stream = session.request(headers, { endStream: request.body === undefined, ...(request.signal ? { signal: request.signal } : {}) });
  const health = liveness.get(session)!;
  health.opened();
  stream.once("close", () => health.closed());
  if (request.body !== undefined) stream.end(request.body);
  return new Promise((resolve, reject) => {
    const fail = (error: Error) => reject(error.name === "AbortError" ? error : connectionFailure(session, error));
    stream.once("error", fail);
    // Reset without an error (a stream refused, a session closed under it): a rejection all the same, never a wait forever.
    stream.once("close", () => fail(new Error(`the API server closed the stream before answering (HTTP/2 code ${stream.rstCode})`)));
    stream.once("response", (answer) => {
      stream.off("error", fail);
      health.heard();
      resolve({ status: Number(answer[":status"]), headers: answer, stream, heard: () => health.heard() });
    });
  });
}

/** What failed a stream, when its connection failed under it: the connection's error (Node cancels the pending stream first, giving it as the cause). */
function connectionFailure(session: ClientHttp2Session, error: Error): Error {
  const cause = (error as { code?: string; cause?: unknown }).cause;
  if ((error as { code?: string }).code === "ERR_HTTP2_STREAM_CANCEL" && cause instanceof Error) return cause;
  return sessionFailures.get(session) ?? error;
}

/** An answer's body, chunk by chunk as it comes, each counted as the connection heard. */
export async function* bodyChunks(response: ApiResponse): AsyncGenerator<Buffer> {
  for await (const chunk of response.stream) {
    response.heard();
    yield chunk as Buffer;
  }
}

/** The whole body of an answer. */
export async function readBody(response: ApiResponse): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of bodyChunks(response)) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** HTTP/2 names its headers in lower case; client-node's generated API writes them as HTTP/1.1 does. */
function lowerCased(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
}

/** Closes every session (their streams end first): a process that is done exits at once. */
export function closeApiSessions(): void {
  for (const session of sessions.values()) session.close();
  sessions.clear();
}
