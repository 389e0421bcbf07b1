import { describe, expect, it } from "vitest";
import { needlessRepairs, type RepairEvent } from "../../kit/soak/repairs.js";

const event = (reason: string, at: string): RepairEvent => ({
  metadata: { uid: "e1" },
  reason,
  involvedObject: { namespace: "soak-a", name: "m", uid: "m" },
  firstTimestamp: at,
  message: "This pod runs without meshcni's redirect",
});
const seenAt = (ip: string, restarts: number, at: string) => new Map([["m", { ip, restarts, at: Date.parse(at) }]]);
const now = (ip: string, restarts: number) => new Map([["m", { ip, restarts }]]);

describe("the soak's needless repairs", () => {
  it("a repair of a pod whose proxy had answered in the sandbox it still runs in is one", () => {
    const found = needlessRepairs(
      [event("MeshRedirectMissing", "2026-11-28T10:00:10Z")],
      now("10.0.0.5", 0),
      seenAt("10.0.0.5", 0, "2026-11-28T10:00:00Z"),
    );
    expect(found).toEqual([
      "soak-a/m repaired (MeshRedirectMissing) at 2026-11-28T10:00:10.000Z although its proxy answered in the same sandbox at 2026-11-28T10:00:00.000Z: This pod runs without meshcni's redirect",
    ]);
  });

  it("not one: a new sandbox since (another IP, or restarts), a repair before the proxy answered, another reason, a pod never seen", () => {
    const repair = [event("MeshRedirectDrifted", "2026-11-28T10:00:10Z")];
    const seen = seenAt("10.0.0.5", 0, "2026-11-28T10:00:00Z");
    expect(needlessRepairs(repair, now("10.0.0.9", 0), seen)).toEqual([]);
    expect(needlessRepairs(repair, now("10.0.0.5", 1), seen)).toEqual([]);
    expect(needlessRepairs(repair, now("10.0.0.5", 0), seenAt("10.0.0.5", 0, "2026-11-28T10:00:20Z"))).toEqual([]);
    expect(needlessRepairs([event("Scheduled", "2026-11-28T10:00:10Z")], now("10.0.0.5", 0), seen)).toEqual([]);
    expect(needlessRepairs(repair, now("10.0.0.5", 0), new Map())).toEqual([]);
  });
});
