import type { KubeConfig } from "@kubernetes/client-node";
import fetch from "node-fetch";
import { ApiStatusError, retryAfterMs, statusMessage } from "./errors.js";

/** One event of a watch, as the API server sends it. */
export interface WatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object: { kind?: string; code?: number; message?: string; metadata?: { resourceVersion?: string } } & Record<string, unknown>;
}

/**
 * A GET of `path` with the kubeconfig's credentials, through client-node's own transport
 * (its fetch, agent and auth) but with a signal that aborts it at any point, the wait for
 * the headers included, and the answer's status, Retry-After and Status message kept. An
 * answer other than 200 rejects with an ApiStatusError.
 */
async function get(config: KubeConfig, path: string, query: Record<string, string>, signal: AbortSignal) {
  const cluster = config.getCurrentCluster();
  if (!cluster) throw new Error("the kubeconfig names no cluster");
  const url = new URL(cluster.server + path);
  for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
  const options = await config.applyToFetchOptions({});
  const response = await fetch(url.toString(), { ...options, method: "GET", signal: signal as never });
  if (response.status === 200) return response;
  const status = statusMessage(response.status, await response.text());
  throw new ApiStatusError(response.status, status.message, retryAfterMs(response.headers.get("retry-after")), status.causes);
}

/** GETs a list (one page of it) as JSON. */
export async function getJson(config: KubeConfig, path: string, query: Record<string, string>, signal: AbortSignal): Promise<unknown> {
  return (await get(config, path, query, signal)).json();
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
  for await (const chunk of response.body as AsyncIterable<Uint8Array | string>) {
    buffered += typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true });
    for (let end = buffered.indexOf("\n"); end >= 0; end = buffered.indexOf("\n")) {
      const line = buffered.slice(0, end).trim();
      buffered = buffered.slice(end + 1);
      if (line) onEvent(JSON.parse(line) as WatchEvent);
    }
  }
}
