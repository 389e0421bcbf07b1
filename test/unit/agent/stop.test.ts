import { describe, expect, it } from "vitest";
import { decideStop, ownerState } from "../../../src/agent/stop.js";
import { ApiStatusError } from "../../../src/kube/errors.js";

describe("telling a restart from an uninstall", () => {
  const owner = (answer: "present" | "deleted" | "denied" | "unauthenticated" | "unowned" | Error) => async () => {
    if (answer instanceof Error) throw answer;
    return answer;
  };
  /** The plugin's token: refused (401) or not. */
  const plugin = (refused: boolean) => async () => refused;

  it("keeps everything while the DaemonSet stays (a rollout), and uninstalls once it is deleted or its permissions went", async () => {
    expect(await decideStop("auto", true, owner("present"), plugin(false))).toMatchObject({ uninstall: false });
    expect(await decideStop("auto", true, owner("deleted"), plugin(false))).toEqual({ uninstall: true, why: "the DaemonSet is deleted" });
    expect(await decideStop("auto", true, owner("denied"), plugin(false))).toMatchObject({
      uninstall: true,
      why: expect.stringContaining("(403)"),
    });
    expect(await decideStop("auto", true, owner("unowned"), plugin(false))).toMatchObject({
      uninstall: true,
      why: expect.stringContaining("no DaemonSet"),
    });
  });

  it("on a 401 asks with the plugin's token: refused too, the ServiceAccounts went (uninstall); not, its pod was force-deleted (keep)", async () => {
    expect(await decideStop("auto", true, owner("unauthenticated"), plugin(true))).toEqual({
      uninstall: true,
      why: "the ServiceAccounts are gone (401 for the agent's token and the plugin's)",
    });
    expect(await decideStop("auto", true, owner("unauthenticated"), plugin(false))).toEqual({
      uninstall: false,
      why: "the agent's token is refused (401) while the plugin's is not: its pod was deleted; keeping everything",
    });
    const unreachable = async (): Promise<boolean> => {
      throw new Error("timed out");
    };
    expect(await decideStop("auto", true, owner("unauthenticated"), unreachable)).toMatchObject({ uninstall: false });
  });

  it("keeps everything when the API cannot answer: a leftover entry fails closed, a missing one lets pods start unmeshed", async () => {
    expect(await decideStop("auto", true, owner(new Error("connect ECONNREFUSED")), plugin(false))).toMatchObject({
      uninstall: false,
      why: expect.stringContaining("ECONNREFUSED"),
    });
  });

  it("uninstalls outside a pod, and does as told with keep or uninstall", async () => {
    const never = async (): Promise<"present"> => {
      throw new Error("not asked");
    };
    expect(await decideStop("auto", false, never, plugin(false))).toMatchObject({ uninstall: true });
    expect(await decideStop("keep", true, never, plugin(false))).toEqual({ uninstall: false, why: "--on-stop keep" });
    expect(await decideStop("uninstall", true, never, plugin(false))).toEqual({ uninstall: true, why: "--on-stop uninstall" });
  });

  describe("what a stop asks", () => {
    const self = { namespace: "meshcni", name: "meshcni-x7k2p" };
    const api = (pod: string | null | ApiStatusError, daemonSet: "present" | "deleted" = "present") => {
      const asked: string[] = [];
      return {
        asked,
        daemonSetOf: async (_: string, name: string) => {
          asked.push(`pod ${name}`);
          if (pod instanceof ApiStatusError) throw pod;
          return pod;
        },
        daemonSetState: async (_: string, name: string) => {
          asked.push(`daemonset ${name}`);
          return daemonSet;
        },
      };
    };

    it("asks about the DaemonSet learned at start-up by name, never about its own pod (force-deleted pods are gone)", async () => {
      const gone = api(new ApiStatusError(404, "pods not found", undefined));
      expect(await ownerState(gone, self, "meshcni")).toBe("present");
      expect(gone.asked).toEqual(["daemonset meshcni"]);
      expect(await ownerState(api(null), self, null)).toBe("unowned");
    });

    it("never learned: reads its pod now; a pod already gone says nothing (the stop keeps everything), 403 is denied, 401 unauthenticated", async () => {
      const owned = api("meshcni", "deleted");
      expect(await ownerState(owned, self, undefined)).toBe("deleted");
      expect(owned.asked).toEqual(["pod meshcni-x7k2p", "daemonset meshcni"]);
      await expect(ownerState(api(new ApiStatusError(404, "pods not found", undefined)), self, undefined)).rejects.toThrow("not found");
      expect(
        await decideStop("auto", true, () => ownerState(api(new ApiStatusError(404, "gone", undefined)), self, undefined), plugin(false)),
      ).toMatchObject({
        uninstall: false,
      });
      expect(await ownerState(api(new ApiStatusError(403, "forbidden", undefined)), self, undefined)).toBe("denied");
      expect(await ownerState(api(new ApiStatusError(401, "Unauthorized", undefined)), self, undefined)).toBe("unauthenticated");
    });
  });
});
