import type { ListPage, ReflectorSource } from "./watch-ends.js";

/** Half client-go's 500: the peak of a relist is about a page of objects (see collectGarbage). */
const pageSize = 250;
const listTimeoutMs = 60_000;

/** Lists every object in pages, each transformed as it comes: the objects by key, and the list's resourceVersion. */
export async function listAll<T>(
  source: ReflectorSource<T>,
  signal: AbortSignal,
): Promise<{ listed: Map<string, T & { metadata?: { resourceVersion?: string } }>; resourceVersion: string }> {
  const listed = new Map<string, T & { metadata?: { resourceVersion?: string } }>();
  let page: ListPage | undefined;
  do {
    page = await source.list({ limit: pageSize, continue: page?.continue }, AbortSignal.any([signal, AbortSignal.timeout(listTimeoutMs)]));
    for (const item of page.items) {
      const object = source.transform(item);
      listed.set(source.key(object), object);
    }
    collectGarbage();
  } while (page.continue);
  return { listed, resourceVersion: page.resourceVersion };
}

/**
 * A page of a list is ~1 MB of JSON whose objects the transform drops: collected at once
 * (Bun's synchronous GC, a few ms a page), a 30,000-namespace relist never holds more than
 * a page of them, where the heap would otherwise grow by all of them first.
 */
function collectGarbage(): void {
  (globalThis as { Bun?: { gc(force: boolean): void } }).Bun?.gc(true);
}
