import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { eventMessage, repairAction } from "../../../src/audit/repair.js";
import { podObject } from "../../kit/api-server.js";
import { runningPod as pod } from "../../kit/fixtures.js";

describe("repair decisions", () => {
  const self = { namespace: "meshcni", name: "agent" };

  it("deletes a pod with a controller, labels one without, by policy", () => {
    expect(repairAction(pod("a", { owned: true }), "delete", self)).toBe("delete");
    expect(repairAction(pod("b"), "delete", self)).toBe("label");
    expect(repairAction(pod("c", { owned: true }), "label", self)).toBe("label");
    expect(repairAction(pod("d", { owned: true }), "none", self)).toBe("none");
  });

  it("leaves a pod an earlier agent already labelled", () => {
    expect(repairAction(pod("f", { owned: true, labels: { "meshcni.io/unprotected": "true" } }), "delete", self)).toEqual({
      skip: "already labelled meshcni.io/unprotected=true",
    });
  });

  it("never touches its own pod or a pod already being deleted", () => {
    expect(repairAction(podObject("meshcni", "agent", { owned: true }) as V1Pod, "delete", self)).toEqual({ skip: "the agent's own pod" });
    expect(repairAction(pod("e", { owned: true, deleting: true }), "delete", self)).toEqual({ skip: "already being deleted" });
  });

  it("says in the event why and what happens next", () => {
    const audit = { namespace: "shop", name: "a", uid: "u", status: "missing" as const, details: ["no ADD record"] };
    expect(eventMessage(audit, "delete", "delete")).toBe(
      "This pod started without meshcni's iptables redirect (no ADD record), so its TCP traffic can bypass the mesh proxy; meshcni deletes it so its controller recreates it with the redirect.",
    );
    expect(eventMessage(audit, "label", "delete")).toContain("labels it meshcni.io/unprotected=true instead of deleting it");
    expect(eventMessage(audit, "none", "none")).toContain("restart the pod");
  });
});
