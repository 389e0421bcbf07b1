import type { V1Pod } from "@kubernetes/client-node";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { AddsWritten } from "../../../../src/agent/sweeps/adds-written.js";
import { AuditMonitor } from "../../../../src/agent/sweeps/monitor.js";
import type { SweepOptions } from "../../../../src/agent/sweeps/options.js";
import type { PodReport, SweepRequest } from "../../../../src/audit/contract.js";
import { podObject } from "../../../kit/api/server.js";
import { type LogEntry, memoryLogger } from "../../../kit/memory-logger.js";

const pod = (name: string, deleting = false) =>
  podObject("shop", name, { proxy: "container", nodeName: "n1", podIP: "10.0.0.9", deleting }) as V1Pod;

/**
 * The agent's event sweeps (docs/agent.md), on a clock the test moves: at least
 * 2 s apart, events in between making one sweep, each of only the pods the events named,
 * and none for a pod being deleted.
 */
describe("the agent's sweeps on pod events", () => {
  let sweeps: Array<{ at: number; pods: string[] }>;
  let entries: unknown[];
  let reported: PodReport[];
  let seenGiven: SweepRequest["seen"][];
  let lines: LogEntry[];
  let counts: Array<Record<string, number>>;
  let written: AddsWritten;
  const entry = { type: "meshcni", state_dir: "/var/run/meshcni" };
  let monitor: AuditMonitor;

  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "performance"] });
    sweeps = [];
    entries = [];
    seenGiven = [];
    reported = [];
    lines = [];
    counts = [];
    written = new AddsWritten();
    const sweep = { repair: "redirect", maxEvictionsPerMinute: 2, excludeNamespaces: [], evictNamespaces: undefined, auditSeconds: 600 };
    monitor = new AuditMonitor(
      {
        binary: "/meshcni",
        node: "n1",
        credentials: () => "kubeconfig",
        self: undefined,
        dirs: { hostRoot: "", stateDir: "/nowhere/meshcni", netDir: "/etc/cni/net.d", netnsDirs: ["/var/run/netns"], criSocket: "" },
        entry: () => entry,
        sweep: sweep as unknown as SweepOptions,
        view: async () => undefined,
        holdsNode: () => false,
        written,
      },
      memoryLogger(lines),
      {
        statuses: (byStatus) => void counts.push(byStatus),
        repaired: () => undefined,
        moved: () => undefined,
        recordsRemoved: () => undefined,
        backends: () => undefined,
        audited: () => undefined,
        unchanged: () => undefined,
      },
      async (_binary, input) => {
        sweeps.push({ at: performance.now(), pods: input.request.pods });
        entries.push(input.request.entry);
        seenGiven.push(input.request.seen);
        const summary = { protected: 0, adopted: 0, missing: 0, drifted: 0, unknown: 0 };
        return {
          report: {
            node: "n1",
            pods: reported,
            summary,
            recordsRemoved: { podGone: 0, netnsGone: 0, sandboxGone: 0 },
            backends: { records: {} },
          },
        };
      },
    );
  });
  afterEach(async () => {
    await monitor.stop();
    vi.useRealTimers();
  });

  it("sweeps a changed pod at once, then the next events' pods together, 2 s after the last sweep and only those", async () => {
    const start = performance.now();
    monitor.changed(pod("web"));
    await vi.advanceTimersByTimeAsync(0);
    expect(sweeps).toEqual([{ at: start, pods: ["shop/web"] }]);
    await vi.advanceTimersByTimeAsync(300);
    monitor.changed(pod("api"));
    await vi.advanceTimersByTimeAsync(500);
    monitor.changed(pod("db"));
    await vi.advanceTimersByTimeAsync(1199);
    expect(sweeps).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(sweeps.at(-1)).toEqual({ at: start + 2000, pods: ["shop/api", "shop/db"] });
    monitor.changed(pod("web"));
    await vi.advanceTimersByTimeAsync(5000);
    expect(sweeps.map((sweep) => sweep.at - start)).toEqual([0, 2000, 4000]);
    expect(sweeps.at(-1)!.pods).toEqual(["shop/web"]);
    // Each holds the pods to the agent's own entry, whatever the active config says.
    expect(entries).toEqual([entry, entry, entry]);
  });

  it("hands each sweep the netns the last ones read clean, so an unchanged one is not read again", async () => {
    const seen = { netns: "0:9", generation: 4, plans: "digest", hasRedirect: true };
    reported = [{ namespace: "shop", name: "web", uid: "u1", status: "protected", details: [], seen }];
    monitor.changed(pod("web"));
    await vi.advanceTimersByTimeAsync(0);
    reported = [{ namespace: "shop", name: "web", uid: "u1", status: "drifted", details: ["-A PROXY_INIT_OUTPUT missing"] }];
    monitor.changed(pod("web"));
    await vi.advanceTimersByTimeAsync(2000);
    monitor.changed(pod("web"));
    await vi.advanceTimersByTimeAsync(2000);
    expect(seenGiven).toEqual([[], [{ uid: "u1", ...seen }], []]);
  });

  it("starts no sweep for a pod as the agent's own ADD wrote it (counted protected); one changed since, or given another address, is swept", async () => {
    written.note(pod("web"), ["10.0.0.9/24"]);
    written.note(pod("api"), ["10.0.0.7/24"]);
    monitor.changed(pod("web"));
    monitor.changed(pod("web"));
    await vi.advanceTimersByTimeAsync(10_000);
    expect(sweeps).toEqual([]);
    expect(counts).toEqual([expect.objectContaining({ protected: 1, missing: 0 })]);
    const skipping = podObject("shop", "web", {
      proxy: "container",
      nodeName: "n1",
      podIP: "10.0.0.9",
      annotations: { "config.linkerd.io/skip-outbound-ports": "443" },
    }) as V1Pod;
    monitor.changed(skipping);
    monitor.changed(pod("api"));
    await vi.advanceTimersByTimeAsync(2000);
    expect(sweeps.map((sweep) => sweep.pods)).toEqual([["shop/web"], ["shop/api"]]);
  });

  it("starts no sweep for a pod being deleted, nor for an unmeshed one", async () => {
    monitor.changed(pod("leaving", true));
    monitor.changed(podObject("shop", "plain", { proxy: false, nodeName: "n1", podIP: "10.0.0.8" }) as V1Pod);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(sweeps).toEqual([]);
  });

  it("warns once per pod and reason of a netns the runtime does not confirm as the pod's; other pods left alone, and later sweeps, at debug", async () => {
    const unconfirmed =
      "its ADD record names netns /run/netns/cni-b, but the container runtime says the pod's sandbox has /run/netns/cni-a";
    const base = { namespace: "shop", uid: "u1", status: "missing" as const, details: [] };
    reported = [
      { ...base, name: "web", skipped: `not acted on: ${unconfirmed}`, unconfirmed },
      { ...base, name: "api", uid: "u2", skipped: "acted on 1 min ago: left alone for 5 min" },
    ];
    const said = () =>
      lines.filter((line) => line.message === "leaving an unprotected pod alone").map((line) => [line.level, line.fields?.pod]);
    monitor.changed(pod("web"));
    await vi.advanceTimersByTimeAsync(0);
    expect(said()).toEqual([
      ["warn", "shop/web"],
      ["debug", "shop/api"],
    ]);
    monitor.changed(pod("web"));
    await vi.advanceTimersByTimeAsync(2000);
    expect(said().slice(2)).toEqual([
      ["debug", "shop/web"],
      ["debug", "shop/api"],
    ]);
  });
});
