import {
  type Configuration,
  createConfiguration,
  type KubeConfig,
  type RequestContext,
  ResponseContext,
  ServerConfiguration,
  wrapHttpLibrary,
} from "@kubernetes/client-node";
import { apiEndpoint, apiRequest, bodyChunks, readBody } from "./api-session.js";
import { ApiStatusError, retryAfterMs, statusMessage } from "./errors.js";

/** One event of a watch, as the API server sends it. */
export interface WatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object: { kind?: string; code?: number; message?: string; metadata?: { resourceVersion?: string } } & Record<string, unknown>;
}

/**
 * A GET of `path` with the kubeconfig's credentials, on the process's one connection to
 * the server, with a signal that aborts it at any point (the wait for the headers
 * included), and the answer's status, Retry-After and Status message kept. An answer other
 * than 200 rejects with an ApiStatusError.
 */
async function get(config: KubeConfig, path: string, query: Record<string, string>, signal: AbortSignal) {
  const endpoint = await apiEndpoint(config);
  // The server's own path kept (a proxy's prefix, as Rancher's kubeconfigs have), as client-node's generated API keeps it.
  const url = new URL(config.getCurrentCluster()!.server + path);
  for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
  const response = await apiRequest(endpoint, {
    method: "GET",
    path: url.pathname + url.search,
    headers: { accept: "application/json" },
    signal,
  });
  if (response.status === 200) return response;
  const status = statusMessage(response.status, (await readBody(response)).toString());
  const retryAfter = response.headers["retry-after"];
  throw new ApiStatusError(
    response.status,
    status.message,
    retryAfterMs(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter),
    status.causes,
  );
}

/** GETs a list (one page of it) as JSON. */
export async function getJson(config: KubeConfig, path: string, query: Record<string, string>, signal: AbortSignal): Promise<unknown> {
  return JSON.parse((await readBody(await get(config, path, query, signal))).toString());
}

/**
 * Watches `path`, calling `onHeaders` once the server accepted the watch and `onEvent` for
 * each event, until the server ends the stream (resolves) or the request fails (rejects).
 */
export async function streamWatch(
  config: KubeConfig,
  path: string,
  query: Record<string, string>,
  signal: AbortSignal,
  onEvent: (event: WatchEvent) => void,
  onHeaders: () => void,
): Promise<void> {
  const response = await get(config, path, { ...query, watch: "true" }, signal);
  onHeaders();
  let buffered = "";
  const decoder = new TextDecoder();
  for await (const chunk of bodyChunks(response)) {
    buffered += decoder.decode(chunk, { stream: true });
    for (let end = buffered.indexOf("\n"); end >= 0; end = buffered.indexOf("\n")) {
      const line = buffered.slice(0, end).trim();
      buffered = buffered.slice(end + 1);
      if (line) onEvent(JSON.parse(line) as WatchEvent);
    }
  }
}

/**
 * client-node's generated API (`CoreV1Api`…) for `config`, sending through the same
 * connection as the watches: its own transport would open a connection per request
 * (node-fetch under Node, Bun's fetch in the binary: two clients, one tested).
 */
export function makeApiClient<Api>(config: KubeConfig, api: new (configuration: Configuration) => Api): Api {
  const cluster = config.getCurrentCluster();
  if (!cluster) throw new Error("the kubeconfig names no cluster");
  const httpApi = wrapHttpLibrary({
    async send(request: RequestContext): Promise<ResponseContext> {
      const url = new URL(request.getUrl());
      const body = request.getBody() as string | Buffer | undefined;
      const response = await apiRequest(await apiEndpoint(config), {
        method: request.getHttpMethod(),
        path: url.pathname + url.search,
        headers: request.getHeaders(),
        ...(body === undefined ? {} : { body }),
        signal: request.getSignal() as AbortSignal | undefined,
      });
      const answer = await readBody(response);
      const headers = Object.fromEntries(
        Object.entries(response.headers).flatMap(([name, value]) => (name.startsWith(":") ? [] : [[name, String(value)]])),
      );
      return new ResponseContext(response.status, headers, { text: async () => answer.toString(), binary: async () => answer });
    },
  });
  return new api(
    createConfiguration({ baseServer: new ServerConfiguration(cluster.server, {}), authMethods: { default: config }, httpApi }),
  );
}
