import { describe, expect, it } from "vitest";
import type { OwnerState } from "../../../src/agent/stop.js";
import { askPatiently, decideStop, ownerState } from "../../../src/agent/stop.js";
import { ApiStatusError } from "../../../src/kube/errors.js";

describe("telling a restart from an uninstall", () => {
  const owner = (answer: "present" | "deleted" | "denied" | "unauthenticated" | "unowned" | Error) => async () => {
    if (answer instanceof Error) throw answer;
    return answer;
  };

  it("keeps everything while the DaemonSet stays (a rollout), and uninstalls once it is deleted or its permissions went", async () => {
    expect(await decideStop("auto", true, false, owner("present"))).toMatchObject({ uninstall: false });
    expect(await decideStop("auto", true, false, owner("deleted"))).toEqual({ uninstall: true, why: "the DaemonSet is deleted" });
    expect(await decideStop("auto", true, false, owner("denied"))).toMatchObject({
      uninstall: true,
      why: expect.stringContaining("(403)"),
    });
    expect(await decideStop("auto", true, false, owner("unowned"))).toMatchObject({
      uninstall: true,
      why: expect.stringContaining("no DaemonSet"),
    });
  });

  it("uninstalls once its watch saw its ServiceAccount deleted, whatever the API answers now (every request refused from then on)", async () => {
    const refused = async (): Promise<"unauthenticated"> => "unauthenticated";
    expect(await decideStop("auto", true, true, refused)).toEqual({
      uninstall: true,
      why: "the agent's ServiceAccount was deleted (its watch said so)",
    });
    const hung = async (): Promise<"present"> => new Promise(() => undefined);
    expect(await decideStop("auto", true, true, hung)).toMatchObject({ uninstall: true });
  });

  it("keeps everything on a 401 with no deletion seen: a force-deleted pod, or a signing key rotated without the old one kept", async () => {
    expect(await decideStop("auto", true, false, owner("unauthenticated"))).toEqual({
      uninstall: false,
      why: "the agent's token is refused (401) and no deletion of the DaemonSet was seen: its pod was force-deleted, or the signing key rotated; keeping everything",
    });
  });

  it("keeps everything when the API cannot answer: a leftover entry fails closed, a missing one lets pods start unmeshed", async () => {
    expect(await decideStop("auto", true, false, owner(new Error("connect ECONNREFUSED")))).toMatchObject({
      uninstall: false,
      why: expect.stringContaining("ECONNREFUSED"),
    });
  });

  it("asks again while the API fails (a restarted server) and takes the first answer; a refusal, a hung server or the time up ends it", async () => {
    const answers: Array<OwnerState | Error> = [new Error("ECONNRESET"), new Error("503"), "deleted"];
    let asked = 0;
    const flaky = async () => {
      asked++;
      const answer = answers.shift()!;
      if (answer instanceof Error) throw answer;
      return answer;
    };
    expect(await decideStop("auto", true, false, () => askPatiently(flaky, { answerMs: 100, forMs: 5000 }))).toMatchObject({
      uninstall: true,
    });
    expect(asked).toBe(3);
    let gone = 0;
    const podGone = async (): Promise<OwnerState> => {
      gone++;
      throw new ApiStatusError(404, 'pods "meshcni-x7k2p" not found', undefined);
    };
    await expect(askPatiently(podGone, { answerMs: 100, forMs: 5000 })).rejects.toThrow("not found");
    expect(gone).toBe(1);
    let hungAsked = 0;
    const hung = async (): Promise<OwnerState> => {
      hungAsked++;
      return new Promise(() => undefined);
    };
    const kept = await decideStop("auto", true, false, () => askPatiently(hung, { answerMs: 100, forMs: 5000 }));
    expect(hungAsked).toBe(1);
    expect(kept).toEqual({
      uninstall: false,
      why: expect.stringMatching(/no answer within 0\.1 s.*keeping everything\. If meshcni is being uninstalled.*`meshcni uninstall`/),
    });
    let down = 0;
    const refusing = async (): Promise<OwnerState> => {
      down++;
      throw new Error("connect ECONNREFUSED");
    };
    await expect(askPatiently(refusing, { answerMs: 100, forMs: 600 })).rejects.toThrow("ECONNREFUSED");
    expect(down).toBeGreaterThan(1);
  });

  it("uninstalls outside a pod, and does as told with keep or uninstall", async () => {
    const never = async (): Promise<"present"> => {
      throw new Error("not asked");
    };
    expect(await decideStop("auto", false, false, never)).toMatchObject({ uninstall: true });
    expect(await decideStop("keep", true, true, never)).toEqual({ uninstall: false, why: "--on-stop keep" });
    expect(await decideStop("uninstall", true, false, never)).toEqual({ uninstall: true, why: "--on-stop uninstall" });
  });

  describe("what a stop asks", () => {
    const self = { namespace: "meshcni", name: "meshcni-x7k2p" };
    const api = (pod: string | null | ApiStatusError, daemonSet: "present" | "deleted" = "present") => {
      const asked: string[] = [];
      return {
        asked,
        ownersOf: async (_: string, name: string) => {
          asked.push(`pod ${name}`);
          if (pod instanceof ApiStatusError) throw pod;
          return { daemonSet: pod, serviceAccount: "meshcni" };
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
        await decideStop("auto", true, false, () => ownerState(api(new ApiStatusError(404, "gone", undefined)), self, undefined)),
      ).toMatchObject({
        uninstall: false,
      });
      expect(await ownerState(api(new ApiStatusError(403, "forbidden", undefined)), self, undefined)).toBe("denied");
      expect(await ownerState(api(new ApiStatusError(401, "Unauthorized", undefined)), self, undefined)).toBe("unauthenticated");
    });
  });
});
