import type { KubeConfig } from "@kubernetes/client-node";
import { getJson, streamWatch } from "./transport.js";
import type { ListPage, ReflectorSource } from "./watch-ends.js";

/**
 * A reflector's source for one collection of the API (`path`, narrowed by `query`, e.g. a
 * field selector), read with the credentials `config()` gives at each request: a rotated
 * token is used from the next request on, and the store is kept.
 */
export function apiSource<T>(options: {
  name: string;
  config: () => KubeConfig;
  path: string;
  query: Record<string, string>;
  transform: ReflectorSource<T>["transform"];
  key: (object: T) => string;
}): ReflectorSource<T> {
  const { name, config, path, query, transform, key } = options;
  return {
    name,
    transform,
    key,
    async list(page, signal): Promise<ListPage> {
      const answer = (await getJson(
        config(),
        path,
        { ...query, limit: String(page.limit), ...(page.continue ? { continue: page.continue } : {}) },
        signal,
      )) as {
        items?: unknown[];
        metadata?: { resourceVersion?: string; continue?: string };
      };
      return {
        items: answer.items ?? [],
        resourceVersion: answer.metadata?.resourceVersion ?? "",
        continue: answer.metadata?.continue || undefined,
      };
    },
    watch: ({ resourceVersion, timeoutSeconds }, signal, onEvent, onHeaders) =>
      streamWatch(
        config(),
        path,
        { ...query, resourceVersion, timeoutSeconds: String(timeoutSeconds), allowWatchBookmarks: "true" },
        signal,
        onEvent,
        onHeaders,
      ),
  };
}
