import { createHash } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { request as httpRequest } from "node:http";
import { type AgentOptions, Agent as HttpsAgent, request as httpsRequest, type RequestOptions } from "node:https";
import type { KubeConfig } from "@kubernetes/client-node";
import {
  type Configuration,
  createConfiguration,
  type HttpLibrary,
  type RequestContext,
  ResponseContext,
  ServerConfiguration,
  wrapHttpLibrary,
} from "@kubernetes/client-node";

/**
 * The agent's one HTTP client for the API server: node:https (node:http for an http
 * server), which Node (the tests) and Bun (the compiled binary) both run, with the TLS
 * settings and credentials the kubeconfig gives (client-node's applyToHTTPSOptions: its CA,
 * client certificate and key, skip-verify, server name, token or exec plugin, set on an
 * https.Agent and the headers). client-node's own transport is fetch, which the binary swaps
 * for Bun's: an option one honours and the other ignores would pass every test.
 */
export async function send(url: URL, options: RequestOptions & { body?: string | Buffer }): Promise<IncomingMessage> {
  try {
    return await sendOnce(url, options);
  } catch (error) {
    // A kept-alive connection the server (or a balancer) closed as it was reused: the request never reached it.
    // A GET is asked once more, on a new connection, as Go's transport does; anything else fails as it came.
    if ((options.method ?? "GET") !== "GET" || !connectionDropped(error) || options.signal?.aborted) throw error;
    return sendOnce(url, options);
  }
}

const droppedCodes = new Set(["ECONNRESET", "EPIPE", "ECONNABORTED"]);
const connectionDropped = (error: unknown) =>
  droppedCodes.has(String((error as { code?: unknown }).code)) || (error as Error).message === "socket hang up";

function sendOnce(url: URL, options: RequestOptions & { body?: string | Buffer }): Promise<IncomingMessage> {
  const { body, ...rest } = options;
  return new Promise((resolve, reject) => {
    const sent = (url.protocol === "http:" ? httpRequest : httpsRequest)(url, rest, resolve);
    sent.on("error", reject);
    sent.end(body);
  });
}

/** The TLS settings an agent's connections are made with: what tells one agent's connections from another's. */
const tlsKeys = ["ca", "cert", "key", "pfx", "passphrase", "rejectUnauthorized", "servername"] as const;

/** The agents in use, by their TLS settings (a rotated client certificate is a new one): the last few, the older destroyed. */
const agents = new Map<string, HttpsAgent>();
const agentsKept = 4;

/**
 * One keep-alive agent per TLS settings, shared by every request made with them. client-node
 * makes a new agent for each request (applyToHTTPSOptions, and the generated APIs'
 * authentication), so each would open a connection of its own: a TLS handshake per request
 * on the agent's side and the API server's, and idle connections left open until either
 * side's timeout.
 */
export function sharedAgent(options: Partial<Record<(typeof tlsKeys)[number], unknown>>): HttpsAgent {
  const hash = createHash("sha256");
  for (const key of tlsKeys) hash.update(`${key}=${JSON.stringify(options[key] ?? null)};`);
  const key = hash.digest("hex");
  const found = agents.get(key);
  if (found) {
    agents.delete(key);
    agents.set(key, found);
    return found;
  }
  const made = new HttpsAgent({ ...(Object.fromEntries(tlsKeys.map((name) => [name, options[name]])) as AgentOptions), keepAlive: true });
  agents.set(key, made);
  for (const [old, agent] of agents) {
    if (agents.size <= agentsKept) break;
    agents.delete(old);
    agent.destroy();
  }
  return made;
}

/** The shared agent standing for client-node's one (an http server's, or one whose settings it cannot read, is left as it is). */
function shared(agent: unknown): unknown {
  const options = agent instanceof HttpsAgent ? (agent as HttpsAgent & { options?: AgentOptions }).options : undefined;
  return options ? sharedAgent(options) : agent;
}

/** A request with the kubeconfig's TLS settings and credentials; `signal` aborts it at any point, the wait for headers included. */
export async function kubeRequest(
  config: KubeConfig,
  url: URL,
  init: { method: string; headers?: Record<string, string>; body?: string; signal?: AbortSignal },
): Promise<IncomingMessage> {
  const options: RequestOptions = {};
  await config.applyToHTTPSOptions(options);
  const headers = { ...(options.headers as Record<string, string> | undefined), ...init.headers };
  return send(url, {
    ...options,
    agent: shared(options.agent) as HttpsAgent,
    method: init.method,
    headers,
    ...(init.signal ? { signal: init.signal } : {}),
    ...(init.body ? { body: init.body } : {}),
  });
}

/** An answer's whole body, as text. */
export async function bodyText(answer: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of answer) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString("utf8");
}

/** client-node's generated APIs over the same client: the agent and credentials their authentication put on each request. */
export const httpsLibrary: HttpLibrary = wrapHttpLibrary({
  async send(request: RequestContext): Promise<ResponseContext> {
    const body = request.getBody();
    const answer = await send(new URL(request.getUrl()), {
      method: request.getHttpMethod().toString(),
      headers: request.getHeaders(),
      agent: shared(request.getAgent()) as HttpsAgent,
      ...(request.getSignal() ? { signal: request.getSignal() as AbortSignal } : {}),
      ...(typeof body === "string" || Buffer.isBuffer(body) ? { body } : {}),
    });
    const text = await bodyText(answer);
    const headers = Object.fromEntries(Object.entries(answer.headers).map(([name, value]) => [name, String(value)]));
    return new ResponseContext(answer.statusCode ?? 0, headers, { text: async () => text, binary: async () => Buffer.from(text) });
  },
});

/** A client-node API (CoreV1Api…) over the agent's one client, with the kubeconfig's credentials: KubeConfig.makeApiClient, another transport. */
export function apiClient<T>(config: KubeConfig, api: new (configuration: Configuration) => T): T {
  const cluster = config.getCurrentCluster();
  if (!cluster) throw new Error("the kubeconfig names no cluster");
  return new api(
    createConfiguration({
      baseServer: new ServerConfiguration(cluster.server, {}),
      authMethods: { default: config },
      httpApi: httpsLibrary,
    }),
  );
}
