import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { eventMessage, type RepairLimits, repairAction } from "../../../src/audit/repair.js";
import { podObject } from "../../kit/api/server.js";
import { runningPod as pod } from "../../kit/fixtures.js";

const limits = (more: Partial<RepairLimits> = {}): RepairLimits => ({
  self: { namespace: "meshcni", name: "agent" },
  excludeNamespaces: new Set(),
  skipUids: new Set(),
  evictionsLeft: 2,
  ...more,
});

describe("repair decisions", () => {
  it("acts by policy; evict needs a controller (else it labels) and a budget", () => {
    expect(repairAction(pod("a"), "redirect", limits())).toBe("redirect");
    expect(repairAction(pod("a", { owned: true }), "evict", limits())).toBe("evict");
    expect(repairAction(pod("b"), "evict", limits())).toBe("label");
    expect(repairAction(pod("c", { owned: true }), "evict", limits({ evictionsLeft: 0 }))).toEqual({
      skip: expect.stringContaining("rate limit"),
    });
    expect(repairAction(pod("d"), "label", limits())).toBe("label");
    expect(repairAction(pod("e"), "none", limits())).toBe("none");
  });

  it("evicts only in the namespaces the operator allows (--evict-namespaces): elsewhere it leaves the pod, saying why", () => {
    const allowed = limits({ evictNamespaces: new Set(["web"]) });
    expect(repairAction(pod("a", { owned: true }), "evict", allowed)).toEqual({
      skip: "meshcni does not evict in namespace shop (not in --evict-namespaces): restart the pod to get the redirect",
    });
    const inWeb = { ...pod("a", { owned: true }), metadata: { ...pod("a", { owned: true }).metadata, namespace: "web" } } as V1Pod;
    expect(repairAction(inWeb, "evict", allowed)).toBe("evict");
    // A pod no controller would recreate is labelled, as without the list.
    expect(repairAction(pod("b"), "evict", allowed)).toBe("label");
  });

  it("never evicts Linkerd's control plane, nor in its own namespace (its agents on other nodes), whatever --evict-namespaces says", () => {
    const owned = pod("a", { owned: true });
    const controlPlane = {
      ...owned,
      metadata: { ...owned.metadata, namespace: "linkerd", labels: { "linkerd.io/control-plane-component": "destination" } },
    } as V1Pod;
    const skipped = { skip: "meshcni never evicts Linkerd's control plane or its namespace: restart the pod to get the redirect" };
    expect(repairAction(controlPlane, "evict", limits())).toEqual(skipped);
    // Another pod of the control plane's namespace (an extension's, say): its proxy names the namespace it is in.
    const inMeshNamespace = {
      ...owned,
      metadata: { ...owned.metadata, namespace: "mesh", labels: { "linkerd.io/control-plane-ns": "mesh" } },
    } as V1Pod;
    expect(repairAction(inMeshNamespace, "evict", limits())).toEqual(skipped);
    const meshedElsewhere = { ...owned, metadata: { ...owned.metadata, labels: { "linkerd.io/control-plane-ns": "mesh" } } } as V1Pod;
    expect(repairAction(meshedElsewhere, "evict", limits())).toBe("evict");
    const ownNamespace = { ...owned, metadata: { ...owned.metadata, namespace: "meshcni" } } as V1Pod;
    expect(repairAction(ownNamespace, "evict", limits({ evictNamespaces: new Set(["meshcni"]) }))).toEqual({
      skip: "meshcni never evicts in its own namespace meshcni: restart the pod to get the redirect",
    });
    // Other policies are as before: writing the redirect in place takes nothing down.
    expect(repairAction(controlPlane, "redirect", limits())).toBe("redirect");
  });

  it("leaves alone its own pod, a pod being deleted, one already labelled, one acted on recently, an excluded namespace", () => {
    expect(repairAction(podObject("meshcni", "agent") as V1Pod, "redirect", limits())).toEqual({ skip: "the agent's own pod" });
    expect(repairAction(pod("f", { deleting: true }), "redirect", limits())).toEqual({ skip: "already being deleted" });
    expect(repairAction(pod("g", { labels: { "meshcni.io/unprotected": "true" } }), "redirect", limits())).toEqual({
      skip: "already labelled meshcni.io/unprotected=true",
    });
    expect(repairAction(pod("h"), "redirect", limits({ skipUids: new Set(["uid-shop-h"]) }))).toEqual({ skip: "acted on recently" });
    expect(repairAction(pod("i"), "redirect", limits({ excludeNamespaces: new Set(["shop"]) }))).toEqual({
      skip: "namespace shop is excluded from repair",
    });
  });

  it("says in the Event what was found, what was done, and what happens next", () => {
    const missing = { namespace: "shop", name: "a", uid: "u", status: "missing" as const, details: ["no redirect in its netns"] };
    expect(eventMessage(missing, "redirect", "redirect", "done")).toBe(
      "This pod runs without meshcni's redirect, so its TCP traffic bypasses the mesh proxy (no redirect in its netns). meshcni wrote the planned rules into its netns: new connections go through the proxy; connections opened before stay outside the mesh until they reconnect.",
    );
    const drifted = { ...missing, status: "drifted" as const, details: ["ipv4: a"] };
    expect(eventMessage(drifted, "redirect", "redirect", { failed: "EPERM" })).toContain(
      "differs from meshcni's plan, so some of its TCP traffic can bypass the mesh proxy (ipv4: a). meshcni could not write the planned rules into its netns (EPERM)",
    );
    expect(eventMessage(missing, "evict", "evict", "done")).toContain("through the Eviction API (PodDisruptionBudgets hold)");
    expect(eventMessage(missing, "label", "evict", "done")).toContain("instead of evicting it: no controller would recreate it");
    expect(eventMessage(missing, "none", "none", "done")).toContain("restart the pod");
  });
});
