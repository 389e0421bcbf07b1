import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { startWatchdog } from "../../../src/plugin/watchdog.js";

describe("the invocation's watchdog", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("fires once its budget is spent, and never once disarmed", () => {
    const expired = vi.fn();
    startWatchdog(1000, expired);
    vi.advanceTimersByTime(999);
    expect(expired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(expired).toHaveBeenCalledOnce();
    const disarmedOne = vi.fn();
    startWatchdog(1000, disarmedOne)();
    vi.advanceTimersByTime(5000);
    expect(disarmedOne).not.toHaveBeenCalled();
  });
});
