import { afterAll, beforeAll } from "vitest";
import { type ClusterOptions, RealCluster } from "./cluster.js";

/** The real cluster of one suite: up before its tests (then `prepare`, if any), down after them. */
export function suiteCluster(prepare?: (cluster: RealCluster) => Promise<void>, options: ClusterOptions = {}): RealCluster {
  const cluster = new RealCluster(options);
  beforeAll(async () => {
    await cluster.up();
    await prepare?.(cluster);
  }, 300_000);
  afterAll(async () => {
    await cluster.down();
  }, 120_000);
  return cluster;
}
