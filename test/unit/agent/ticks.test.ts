import { afterEach, describe, expect, it, vi } from "vitest";
import { everyTick } from "../../../src/agent/ticks.js";

describe("the agent's shared ticks", () => {
  afterEach(() => vi.useRealTimers());

  it("runs the looks of one period on one timer, each at every tick, until the last one stops", () => {
    vi.useFakeTimers();
    const ran: string[] = [];
    const stopDirs = everyTick(1000, () => ran.push("dirs"));
    const stopSocket = everyTick(1000, () => ran.push("socket"));
    const stopOther = everyTick(250, () => ran.push("other"));
    expect(vi.getTimerCount()).toBe(2);
    vi.advanceTimersByTime(1000);
    expect(ran.filter((each) => each !== "other")).toEqual(["dirs", "socket"]);
    expect(ran.filter((each) => each === "other")).toHaveLength(4);
    stopOther();
    stopDirs();
    ran.length = 0;
    vi.advanceTimersByTime(2000);
    expect(ran).toEqual(["socket", "socket"]);
    expect(vi.getTimerCount()).toBe(1);
    stopSocket();
    expect(vi.getTimerCount()).toBe(0);
    // A period started again after its last stop gets a timer of its own again.
    const stopAgain = everyTick(1000, () => ran.push("again"));
    vi.advanceTimersByTime(1000);
    expect(ran).toEqual(["socket", "socket", "again"]);
    stopAgain();
    stopAgain();
    expect(vi.getTimerCount()).toBe(0);
  });
});
