import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { V1Pod } from "@kubernetes/client-node";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { AuditMonitor } from "../../../../src/agent/sweeps/monitor.js";
import type { SweepOptions } from "../../../../src/agent/sweeps/options.js";
import { readClean, unmoved } from "../../../../src/agent/sweeps/unchanged.js";
import type { PodReport, SweepReport, SweepRequest } from "../../../../src/audit/contract.js";
import type { NetnsLook } from "../../../../src/audit/netns-look.js";
import { podObject } from "../../../kit/api/server.js";
import { memoryLogger } from "../../../kit/memory-logger.js";

const seenAt = (path: string, identity: string, generation: number) => ({
  netns: `${path} ${identity}`,
  generation,
  plans: "digest",
  hasRedirect: true,
});
const clean = (name: string, generation: number): PodReport => ({
  namespace: "shop",
  name,
  uid: `uid-${name}`,
  status: "protected",
  details: [],
  seen: seenAt(`/var/run/netns/${name}`, `0:${name.length}`, generation),
});
const reportOf = (pods: PodReport[], removed = 0): SweepReport => ({
  node: "n1",
  pods,
  summary: { protected: pods.length, adopted: 0, missing: 0, drifted: 0, unknown: 0 },
  recordsRemoved: { podGone: removed, netnsGone: 0, sandboxGone: 0 },
  backends: { records: {} },
});
const dirs = ["/var/run/netns"];

describe("a full sweep found clean: what the next is held to", () => {
  it("is each pod's netns as read, only when every pod was protected, read clean, and nothing was done or removed", () => {
    expect(readClean(reportOf([clean("web", 4), clean("db", 9)]), dirs)).toEqual([
      { path: "/var/run/netns/web", identity: "0:3", generation: 4 },
      { path: "/var/run/netns/db", identity: "0:2", generation: 9 },
    ]);
    expect(readClean(reportOf([]), dirs)).toEqual([]);
    const unclean: Array<Partial<PodReport>> = [
      { status: "adopted" },
      { seen: undefined },
      { details: ["its redirect is in the legacy backend"] },
      { action: "redirect", result: "done" },
      { moved: { from: "legacy", to: "nft" } },
      { skipped: "excluded" },
      { unconfirmed: "no runtime to ask" },
      { eventFailed: "403" },
      { seen: seenAt("/elsewhere/web", "0:3", 4) },
    ];
    for (const change of unclean) expect(readClean(reportOf([clean("db", 9), { ...clean("web", 4), ...change }]), dirs)).toBeUndefined();
    expect(readClean(reportOf([clean("web", 4)], 1), dirs)).toBeUndefined();
  });

  it("holds while each netns is the same file at the same generation", () => {
    const read = readClean(reportOf([clean("web", 4), clean("db", 9)]), dirs)!;
    const now = (looks: NetnsLook[]) => unmoved(read, looks);
    expect(
      now([
        { identity: "0:3", generation: 4 },
        { identity: "0:2", generation: 9 },
      ]),
    ).toBe(true);
    expect(
      now([
        { identity: "0:3", generation: 5 },
        { identity: "0:2", generation: 9 },
      ]),
    ).toBe(false);
    expect(
      now([
        { identity: "0:7", generation: 4 },
        { identity: "0:2", generation: 9 },
      ]),
    ).toBe(false);
    // Legacy tables there now, or the netns gone: no generation, no identity.
    expect(now([{ identity: "0:3" }, { identity: "0:2", generation: 9 }])).toBe(false);
    expect(now([{}, { identity: "0:2", generation: 9 }])).toBe(false);
    expect(now([{ identity: "0:3", generation: 4 }])).toBe(false);
  });
});

/** The monitor's full sweeps (every auditSeconds) on a clock the test moves, with a stand-in sweep process and writer look. */
describe("the agent's full sweeps on an idle node", () => {
  let stateDir: string;
  let monitor: AuditMonitor;
  let ran: SweepRequest[];
  let unchanged: number;
  let report: SweepReport;
  let looks: NetnsLook[] | undefined;
  let looked: string[][];
  let view: SweepRequest["view"];

  const start = (look = true) => {
    const sweep = { repair: "redirect", maxEvictionsPerMinute: 2, excludeNamespaces: [], evictNamespaces: undefined, auditSeconds: 60 };
    monitor = new AuditMonitor(
      {
        binary: "/meshcni",
        node: "n1",
        credentials: () => "kubeconfig",
        self: undefined,
        dirs: { hostRoot: "", stateDir, netDir: "/etc/cni/net.d", netnsDirs: dirs, criSocket: "" },
        entry: () => ({ type: "meshcni" }),
        sweep: sweep as unknown as SweepOptions,
        view: async () => view,
        holdsNode: () => true,
        ...(look
          ? {
              look: async (paths: string[]) => {
                looked.push(paths);
                return looks;
              },
            }
          : {}),
      },
      memoryLogger([]),
      {
        statuses: () => undefined,
        repaired: () => undefined,
        moved: () => undefined,
        recordsRemoved: () => undefined,
        backends: () => undefined,
        audited: () => undefined,
        unchanged: () => void unchanged++,
      },
      async (_binary, input) => {
        ran.push(input.request);
        return { report };
      },
    );
    monitor.start();
  };
  /** The next full sweep (a minute on): whether it ran its process (a sweep of changed pods names them). */
  const nextMinute = async () => {
    const before = ran.length;
    await vi.advanceTimersByTimeAsync(60_000);
    return ran.slice(before).some((request) => request.pods.length === 0);
  };

  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "performance"] });
    stateDir = mkdtempSync(join(tmpdir(), "meshcni-state-"));
    mkdirSync(join(stateDir, "attachments"));
    writeFileSync(join(stateDir, "attachments", "web_eth0.json"), "{}");
    [ran, looked, unchanged] = [[], [], 0];
    report = reportOf([clean("web", 4), clean("db", 9)]);
    looks = [
      { identity: "0:3", generation: 4 },
      { identity: "0:2", generation: 9 },
    ];
    view = { pods: [{ metadata: { name: "web", namespace: "shop", uid: "uid-web" } }], namespaces: [] };
  });
  afterEach(async () => {
    await monitor.stop();
    vi.useRealTimers();
    rmSync(stateDir, { recursive: true, force: true });
  });

  it("starts no process while nothing moved, asking the writer for exactly the netns the clean sweep read", async () => {
    start();
    await vi.advanceTimersByTimeAsync(0);
    expect(ran).toHaveLength(1);
    // The first asked the runtime for its sandboxes; those that follow within 10 minutes do not.
    expect(ran[0]!.sandboxes).toBe(true);
    expect(await nextMinute()).toBe(false);
    expect(await nextMinute()).toBe(false);
    expect(unchanged).toBe(2);
    expect(looked).toEqual([
      ["/var/run/netns/web", "/var/run/netns/db"],
      ["/var/run/netns/web", "/var/run/netns/db"],
    ]);
  });

  it("runs the process when a generation moved, a record changed, a pod changed, or a changed pod was swept", async () => {
    start();
    await vi.advanceTimersByTimeAsync(0);
    looks = [
      { identity: "0:3", generation: 5 },
      { identity: "0:2", generation: 9 },
    ];
    expect(await nextMinute()).toBe(true);
    report = reportOf([clean("web", 5), clean("db", 9)]);
    expect(await nextMinute()).toBe(true);
    expect(await nextMinute()).toBe(false);
    writeFileSync(join(stateDir, "attachments", "forged_eth0.json"), "{}");
    expect(await nextMinute()).toBe(true);
    expect(await nextMinute()).toBe(false);
    writeFileSync(join(stateDir, "attachments", "web_eth0.json"), '{"netns":"/var/run/netns/db"}');
    expect(await nextMinute()).toBe(true);
    expect(await nextMinute()).toBe(false);
    view = { pods: [{ metadata: { name: "web", namespace: "shop", uid: "uid-web", labels: { a: "b" } } }], namespaces: [] };
    expect(await nextMinute()).toBe(true);
    expect(await nextMinute()).toBe(false);
    monitor.changed(podObject("shop", "api", { proxy: "container", nodeName: "n1", podIP: "10.0.0.7" }) as V1Pod);
    await vi.advanceTimersByTimeAsync(2000);
    expect(ran.at(-1)!.pods).toEqual(["shop/api"]);
    expect(await nextMinute()).toBe(true);
    expect(await nextMinute()).toBe(false);
  });

  it("runs the process after one that was not clean, when the writer cannot look, without the caches' view, and without writers", async () => {
    report = reportOf([{ ...clean("web", 4), status: "drifted", details: ["-A PROXY_INIT_OUTPUT missing"] }]);
    start();
    await vi.advanceTimersByTimeAsync(0);
    expect(await nextMinute()).toBe(true);
    report = reportOf([clean("web", 4), clean("db", 9)]);
    expect(await nextMinute()).toBe(true);
    looks = undefined;
    expect(await nextMinute()).toBe(true);
    // The caches behind (no view): the sweep lists the pods itself, however still the netns are.
    looks = [
      { identity: "0:3", generation: 4 },
      { identity: "0:2", generation: 9 },
    ];
    view = undefined;
    expect(await nextMinute()).toBe(true);
    expect(await nextMinute()).toBe(true);
    expect(unchanged).toBe(0);
    await monitor.stop();
    ran = [];
    start(false);
    await vi.advanceTimersByTimeAsync(0);
    expect(await nextMinute()).toBe(true);
    expect(await nextMinute()).toBe(true);
  });
});
