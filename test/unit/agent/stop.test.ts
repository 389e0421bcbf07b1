import { describe, expect, it } from "vitest";
import { decideStop } from "../../../src/agent/stop.js";

describe("telling a restart from an uninstall", () => {
  const owner = (answer: "present" | "deleted" | "denied" | Error) => async () => {
    if (answer instanceof Error) throw answer;
    return answer;
  };

  it("keeps everything while the DaemonSet stays (a rollout), and uninstalls once it is deleted or its permissions went", async () => {
    expect(await decideStop("auto", true, owner("present"))).toMatchObject({ uninstall: false });
    expect(await decideStop("auto", true, owner("deleted"))).toEqual({ uninstall: true, why: "the DaemonSet is deleted" });
    expect(await decideStop("auto", true, owner("denied"))).toMatchObject({ uninstall: true, why: expect.stringContaining("401/403") });
  });

  it("keeps everything when the API cannot answer: a leftover entry fails closed, a missing one lets pods start unmeshed", async () => {
    expect(await decideStop("auto", true, owner(new Error("connect ECONNREFUSED")))).toMatchObject({
      uninstall: false,
      why: expect.stringContaining("ECONNREFUSED"),
    });
  });

  it("uninstalls outside a pod, and does as told with keep or uninstall", async () => {
    const never = async (): Promise<"present"> => {
      throw new Error("not asked");
    };
    expect(await decideStop("auto", false, never)).toMatchObject({ uninstall: true });
    expect(await decideStop("keep", true, never)).toEqual({ uninstall: false, why: "--on-stop keep" });
    expect(await decideStop("uninstall", true, never)).toEqual({ uninstall: true, why: "--on-stop uninstall" });
  });
});
