import type { CoreV1Event, V1Node, V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { clusterView, renderClusterView } from "../../../src/status/view.js";

const node = (name: string, condition?: { status: string; reason: string; message: string }): V1Node => ({
  metadata: { name },
  status: {
    conditions: [
      { type: "Ready", status: "True", reason: "KubeletReady" },
      ...(condition ? [{ type: "MeshcniReady", lastTransitionTime: new Date("2026-11-25T10:00:00Z"), ...condition }] : []),
    ],
  },
});
const pod = (name: string, nodeName: string, labels: Record<string, string> = {}): V1Pod => ({
  metadata: { namespace: "shop", name, uid: `uid-${name}`, labels },
  spec: { nodeName, containers: [] },
});
const event = (
  name: string,
  type: string,
  at: string,
  message = "m",
  from = { reportingComponent: "meshcni", reportingInstance: "n1" },
): CoreV1Event => ({
  metadata: {},
  involvedObject: { kind: "Pod", namespace: "shop", name, uid: `uid-${name}` },
  reason: "MeshRedirectMissing",
  type,
  message,
  lastTimestamp: new Date(at),
  ...from,
});

const unprotectedNode = node("n1", {
  status: "True",
  reason: "PodsUnprotected",
  message: "meshcni 1.2.3 chained in 10-calico.conflist; 3 meshed pods: 1 protected, 2 missing; 2 unprotected: shop/web, batch/nightly",
});

describe("meshcni status's view of the cluster", () => {
  it("lists each node's condition and version, and no agent where none wrote it", () => {
    const view = clusterView(
      [
        node("n2"),
        unprotectedNode,
        node("n3", { status: "False", reason: "NotChained", message: "meshcni 1.2.3: x does not end with meshcni's entry" }),
      ],
      [],
      [],
    );
    expect(view.nodes.map((entry) => [entry.node, entry.ready, entry.reason, entry.version])).toEqual([
      ["n1", "True", "PodsUnprotected", "1.2.3"],
      ["n2", "none", "", ""],
      ["n3", "False", "NotChained", "1.2.3"],
    ]);
  });

  it("lists the pods a node's condition names and those labelled there, each with its newest meshcni Event; an old Event alone lists nothing", () => {
    const labelled = [pod("marked", "n1", { "meshcni.io/unprotected": "true" }), pod("fixed", "n2", { "meshcni.io/unprotected": "true" })];
    const events = [
      event("web", "Warning", "2026-11-25T09:00:00Z", "older"),
      event("web", "Warning", "2026-11-25T10:00:00Z", "no redirect; meshcni takes no action"),
      // Newer, but not from the pod's node's agent: anyone with events create could have written them.
      event("web", "Warning", "2026-11-25T11:00:00Z", "forged", { reportingComponent: "meshcni", reportingInstance: "n2" }),
      event("web", "Warning", "2026-11-25T11:00:00Z", "forged", { reportingComponent: "other", reportingInstance: "n1" }),
      event("web", "Warning", "2026-11-25T11:00:00Z", "forged", {} as { reportingComponent: string; reportingInstance: string }),
      // A pod warned of on a node whose agent has since found every pod protected.
      event("old", "Warning", "2026-11-25T10:00:00Z"),
    ];
    const view = clusterView(
      [unprotectedNode, node("n2", { status: "True", reason: "Ready", message: "meshcni 1.2.3 chained in c" })],
      labelled,
      events,
    );
    expect(view.unprotected).toEqual([
      {
        namespace: "batch",
        name: "nightly",
        node: "n1",
        reason: "condition",
        detail: "named by its node's MeshcniReady condition",
        at: "",
      },
      { namespace: "shop", name: "marked", node: "n1", reason: "labelled", detail: "labelled meshcni.io/unprotected=true", at: "" },
      {
        namespace: "shop",
        name: "web",
        node: "n1",
        reason: "MeshRedirectMissing",
        detail: "no redirect; meshcni takes no action",
        at: "2026-11-25T10:00:00.000Z",
      },
    ]);
    const table = renderClusterView(view);
    expect(table).toMatch(/^shop +web +n1 +MeshRedirectMissing +no redirect; meshcni takes no action$/m);
    expect(table.trimEnd().split("\n").at(-1)).toBe(
      "3 meshed pod(s) run without their redirect; 2 node(s), 0 not ready, 0 without meshcni's condition",
    );
  });

  it("names a node whose CNI chain the runtime cannot run, with the plugin its condition names", () => {
    const message =
      "meshcni 1.2.3: /etc/cni/net.d/10-calico.conflist chains portmap, with no executable in /opt/cni/bin: the runtime fails every pod's ADD and DEL on this node; 2 meshed pods: 1 protected, 1 missing; 1 unprotected: batch/cron";
    const view = clusterView([node("n3", { status: "False", reason: "ChainBroken", message }), unprotectedNode], [], []);
    // Not ready, its condition still names the pods its sweeps left unprotected.
    expect(view.unprotected.map((pod) => `${pod.namespace}/${pod.name} ${pod.node}`)).toEqual([
      "batch/cron n3",
      "batch/nightly n1",
      "shop/web n1",
    ]);
    const text = renderClusterView(view);
    const lines = text.trimEnd().split("\n");
    expect(lines.find((line) => line.startsWith("n3"))).toMatch(
      /^n3 +False +ChainBroken +1\.2\.3 +\/etc\/cni\/net\.d\/10-calico\.conflist chains portmap,/,
    );
    expect(lines.at(-1)).toBe(
      "3 meshed pod(s) run without their redirect; 2 node(s), 1 not ready (1 with a CNI chain the runtime cannot run: no pod starts there), 0 without meshcni's condition",
    );
  });

  it("counts the pods a condition does not name", () => {
    const crowded = node("n1", {
      status: "True",
      reason: "PodsUnprotected",
      message: "meshcni 1 chained in c; 7 meshed pods: 7 missing; 7 unprotected: a/p0, a/p1, a/p2, a/p3, a/p4 and 2 more",
    });
    const view = clusterView([crowded], [], []);
    expect(view.unprotected.map((entry) => entry.name)).toEqual(["p0", "p1", "p2", "p3", "p4"]);
    expect(view.unnamed).toEqual([{ node: "n1", count: 2 }]);
    expect(renderClusterView(view)).toContain("7 meshed pod(s) run without their redirect");
  });
});
