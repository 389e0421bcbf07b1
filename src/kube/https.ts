import type { IncomingMessage } from "node:http";
import { request as httpRequest } from "node:http";
import { request as httpsRequest, type RequestOptions } from "node:https";
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
export function send(url: URL, options: RequestOptions & { body?: string | Buffer }): Promise<IncomingMessage> {
  const { body, ...rest } = options;
  return new Promise((resolve, reject) => {
    const sent = (url.protocol === "http:" ? httpRequest : httpsRequest)(url, rest, resolve);
    sent.on("error", reject);
    sent.end(body);
  });
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
      agent: request.getAgent(),
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
