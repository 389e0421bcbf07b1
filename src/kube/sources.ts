import type { KubeConfig } from "@kubernetes/client-node";
import { getJson, streamWatch } from "./transport.js";
import type { ListPage, ReflectorSource } from "./watch-ends.js";

/**
 * A reflector's source for one collection of the API (`path`, narrowed by `query`, e.g. a
 * field selector), read with the credentials `config()` gives at each request: a rotated
 * token is used from the next request on, and the store is kept. `heard` hears whether
 * each request was accepted (its headers came) or how it failed.
 */
export function apiSource<T>(options: {
  name: string;
  config: () => KubeConfig;
  path: string;
  query: Record<string, string>;
  transform: ReflectorSource<T>["transform"];
  key: (object: T) => string;
  heard?: (sentAt: number, failure?: unknown) => void;
}): ReflectorSource<T> {
  const { name, config, path, query, transform, key, heard = () => undefined } = options;
  /** Runs `request`, telling `heard` how it failed (or, by `accepted`, that the server took it). */
  const told = async <R>(request: (accepted: () => void) => Promise<R>): Promise<R> => {
    const sentAt = performance.now();
    try {
      return await request(() => heard(sentAt));
    } catch (error) {
      heard(sentAt, error);
      throw error;
    }
  };
  return {
    name,
    transform,
    key,
    async list(page, signal): Promise<ListPage> {
      const pageQuery = { ...query, limit: String(page.limit), ...(page.continue ? { continue: page.continue } : {}) };
      const answer = (await told(async (accepted) => {
        const body = await getJson(config(), path, pageQuery, signal);
        accepted();
        return body;
      })) as {
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
      told((accepted) =>
        streamWatch(
          config(),
          path,
          { ...query, resourceVersion, timeoutSeconds: String(timeoutSeconds), allowWatchBookmarks: "true" },
          signal,
          onEvent,
          () => {
            accepted();
            onHeaders();
          },
        ),
      ),
  };
}
