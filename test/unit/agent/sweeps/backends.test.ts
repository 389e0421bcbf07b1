import { describe, expect, it } from "vitest";
import { createAgentMetrics } from "../../../../src/agent/metrics.js";
import { BackendReport } from "../../../../src/agent/sweeps/backends.js";
import { type LogEntry, memoryLogger } from "../../../kit/memory-logger.js";

describe("where the node's redirects are, as the agent says it", () => {
  it("logs the node's backend and the records' at the first sweep and when they change; warns while some are elsewhere; keeps gauges", async () => {
    const logs: LogEntry[] = [];
    const metrics = createAgentMetrics();
    const report = new BackendReport(memoryLogger(logs), metrics);
    const gauge = async () =>
      (await metrics.registry.getSingleMetric("meshcni_redirect_backend_records")!.get()).values.map(
        ({ labels, value }) => `${labels.backend}/${labels.selected}=${value}`,
      );
    report.take({ node: "nftables", records: { nft: 8 } });
    expect(logs.at(-1)).toMatchObject({ level: "warn", fields: { nodeBackend: "nftables", records: { nft: 8 }, elsewhere: 8 } });
    expect(await gauge()).toEqual(["nft/false=8"]);
    report.take({ node: "nftables", records: { nft: 8 } });
    expect(logs).toHaveLength(1);
    report.take({ node: "nftables", records: { nftables: 8 } });
    expect(logs.at(-1)).toMatchObject({ level: "info", fields: { nodeBackend: "nftables", records: { nftables: 8 } } });
    expect(await gauge()).toEqual(["nftables/true=8"]);
    report.take({ records: {} });
    expect(logs.at(-1)?.fields).toMatchObject({ nodeBackend: "(not known: no meshed pod to plan for)" });
    expect(await gauge()).toEqual([]);
  });
});
