import type { ServerResponse } from "node:http";

export type WatchKind = "Pod" | "Namespace" | "Node" | "Service" | "DaemonSet" | "ServiceAccount";

/**
 * What a watch request gets instead of its events, as a real API server (or what stands in
 * front of it) sometimes answers: the headers and an immediate end ("close"), the headers
 * and then nothing ever ("silent": a half-open connection), no headers at all ("hang"), one
 * ERROR event with that code and the end, or an HTTP error status.
 */
export type WatchFault = "close" | "silent" | "hang" | { error: number } | { status: number };

export type KubeObject = {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string; [key: string]: unknown };
  [key: string]: unknown;
};

interface Watcher {
  kind: WatchKind;
  res: ServerResponse;
  matches(object: KubeObject): boolean;
  timers: NodeJS.Timeout[];
}

interface WatchEvent {
  version: number;
  kind: WatchKind;
  type: "ADDED" | "MODIFIED" | "DELETED";
  object: KubeObject;
}

/** A Kubernetes Status object. */
export function status(code: number, reason: string, message: string, extra: Record<string, unknown> = {}) {
  return { kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message, reason, code, ...extra };
}

/**
 * The watch side of the in-test API server, as kube-apiserver's watch cache behaves: a
 * bounded window of events a watch can resume from (older is 410 Gone, sent as an ERROR
 * event), watches ended after their timeoutSeconds, BOOKMARKs for watches that ask for
 * them, and a restart that drops every connection and starts a new window.
 */
export class WatchHub {
  /** How many events the window keeps; a resume from before them is too old. */
  historyLimit = 10_000;
  /** How often a watch that allows bookmarks gets one (the real server: about once a minute). */
  bookmarkIntervalMs = 60_000;
  /** Bookmarks sent so far, to every watch. */
  bookmarksSent = 0;
  /** Watches opened, by kind (whatever they were answered). */
  readonly opened: Record<WatchKind, number> = { Pod: 0, Namespace: 0, Node: 0, Service: 0, DaemonSet: 0, ServiceAccount: 0 };
  private history: WatchEvent[] = [];
  /** A resourceVersion below this cannot be resumed from. */
  private floor = 0;
  private readonly watchers = new Set<Watcher>();
  /** Responses held open without events (silent or hanging watches). */
  private readonly held = new Set<ServerResponse>();

  /** Records a change and sends it to every open watch it matches. */
  record(event: WatchEvent): void {
    this.history.push(event);
    if (this.history.length > this.historyLimit) {
      const dropped = this.history.splice(0, this.history.length - this.historyLimit);
      this.floor = dropped.at(-1)!.version;
    }
    for (const watcher of this.watchers) if (watcher.kind === event.kind) this.send(watcher, event);
  }

  /** Forgets the window: a resume from any version so far is too old (as after an etcd compaction). */
  compact(version: number): void {
    this.history = [];
    this.floor = version;
  }

  /** As a restarted server: every connection dropped, a new window starting at `version`. */
  restart(version: number): void {
    this.destroyAll();
    this.compact(version);
  }

  destroyAll(): void {
    for (const watcher of this.watchers) this.close(watcher, true);
    for (const res of this.held) res.destroy();
    this.held.clear();
  }

  /**
   * Answers a watch request: the events since `resourceVersion` (or 410 when it is too
   * old), then each change, until `timeoutSeconds` ends it.
   */
  open(
    kind: WatchKind,
    res: ServerResponse,
    query: Record<string, string>,
    matches: (object: KubeObject) => boolean,
    currentVersion: () => number,
    fault: WatchFault | undefined,
  ): void {
    this.opened[kind]++;
    if (fault === "hang") {
      this.hold(res);
      return;
    }
    if (typeof fault === "object" && "status" in fault) {
      const reason = fault.status === 410 ? "Expired" : "InternalError";
      res
        .writeHead(fault.status, { "content-type": "application/json" })
        .end(JSON.stringify(status(fault.status, reason, `watch refused (${fault.status})`)));
      return;
    }
    res.writeHead(200, { "content-type": "application/json" }).flushHeaders();
    if (fault === "close") {
      res.end();
      return;
    }
    if (fault === "silent") {
      this.hold(res);
      return;
    }
    if (typeof fault === "object") {
      res.end(`${JSON.stringify({ type: "ERROR", object: status(fault.error, "InternalError", `watch failed (${fault.error})`) })}\n`);
      return;
    }
    const from = query.resourceVersion ? Number(query.resourceVersion) : undefined;
    if (from !== undefined && from < this.floor) {
      const gone = status(410, "Expired", `too old resource version: ${from} (${this.floor})`);
      res.end(`${JSON.stringify({ type: "ERROR", object: gone })}\n`);
      return;
    }
    const watcher: Watcher = { kind, res, matches, timers: [] };
    this.watchers.add(watcher);
    res.on("close", () => this.close(watcher, false));
    const since = from ?? currentVersion();
    for (const event of this.history) if (event.kind === kind && event.version > since) this.send(watcher, event);
    const timeoutSeconds = Number(query.timeoutSeconds);
    if (timeoutSeconds > 0) watcher.timers.push(setTimeout(() => this.close(watcher, false), timeoutSeconds * 1000));
    if (query.allowWatchBookmarks === "true") {
      watcher.timers.push(
        setInterval(() => {
          const version = String(currentVersion());
          this.bookmarksSent++;
          res.write(
            `${JSON.stringify({ type: "BOOKMARK", object: { kind, apiVersion: "v1", metadata: { resourceVersion: version } } })}\n`,
          );
        }, this.bookmarkIntervalMs),
      );
    }
  }

  /** Every open watch goes half-open (a failover): its connection stays, nothing more comes on it, not even its end. */
  goSilent(): void {
    for (const watcher of [...this.watchers]) {
      this.watchers.delete(watcher);
      for (const timer of watcher.timers) clearTimeout(timer);
      this.hold(watcher.res);
    }
  }

  /** How many watches are open now, by kind. */
  openNow(kind: WatchKind): number {
    return [...this.watchers].filter((watcher) => watcher.kind === kind).length;
  }

  private hold(res: ServerResponse): void {
    this.held.add(res);
    res.on("close", () => this.held.delete(res));
  }

  private send(watcher: Watcher, event: WatchEvent): void {
    if (watcher.matches(event.object)) watcher.res.write(`${JSON.stringify({ type: event.type, object: event.object })}\n`);
  }

  private close(watcher: Watcher, destroy: boolean): void {
    if (!this.watchers.delete(watcher)) return;
    for (const timer of watcher.timers) clearTimeout(timer);
    if (destroy) watcher.res.destroy();
    else watcher.res.end();
  }
}
