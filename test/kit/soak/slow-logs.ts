import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { RealCluster } from "../cluster/cluster.js";
import { paths } from "../cluster/layout.js";

/** How far each of the cluster's logs had got: marked as a fault starts. */
export function logMarks(): Map<string, number> {
  const dir = paths.logs;
  return new Map(existsSync(dir) ? readdirSync(dir).map((name) => [name, statSync(join(dir, name)).size]) : []);
}

/** What a log gained since its mark (all of it for a log made since, or begun again shorter): its last 16 MiB at most. */
export function logSince(path: string, from: number): Buffer {
  const size = statSync(path).size;
  const start = Math.max(from <= size ? from : 0, size - (16 << 20));
  const buffer = Buffer.alloc(size - start);
  const fd = openSync(path, "r");
  try {
    return buffer.subarray(0, readSync(fd, buffer, 0, buffer.length, start));
  } finally {
    closeSync(fd);
  }
}

/**
 * Keeps what a slow recovery can be read from after the cluster is gone: each daemon's log
 * since the fault began, the cluster's Events and its pods as the API saw them then.
 */
export async function keepLogs(cluster: RealCluster, marks: Map<string, number>, dir: string): Promise<void> {
  mkdirSync(dir, { recursive: true });
  for (const name of existsSync(paths.logs) ? readdirSync(paths.logs) : []) {
    // The audit log is the API's every request: far too big to keep for each slow fault.
    if (name !== "audit.log") writeFileSync(join(dir, name), logSince(join(paths.logs, name), marks.get(name) ?? 0));
  }
  const kubectl = (file: string, args: string[]) =>
    cluster.kubectl(args).then(
      (out) => writeFileSync(join(dir, file), out),
      (error: Error) => writeFileSync(join(dir, file), `${error.message}\n`),
    );
  await kubectl("events.txt", ["get", "events", "-A", "--sort-by=.lastTimestamp", "-o", "wide"]);
  await kubectl("pods.txt", ["get", "pods", "-A", "-o", "wide"]);
}
