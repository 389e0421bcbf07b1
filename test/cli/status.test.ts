import { readFileSync, writeFileSync } from "node:fs";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeApiServer, podObject } from "../kit/api/server.js";
import { meshcniBinary } from "../kit/paths.js";

const condition = (status: string, reason: string, message: string) => ({
  type: "MeshcniReady",
  status,
  reason,
  message,
  lastTransitionTime: "2026-11-25T10:00:00Z",
});

/** `meshcni status`, the compiled binary, against the in-test API server holding what agents wrote. */
describe("meshcni status", () => {
  let api: FakeApiServer;
  let kubeconfig: string;
  const status = (...args: string[]) => execa(meshcniBinary, ["status", "--kubeconfig", kubeconfig, ...args], { reject: false });

  beforeAll(async () => {
    api = await new FakeApiServer().start();
    kubeconfig = api.writeKubeconfig();
    api.addNode({
      metadata: { name: "n1" },
      spec: {},
      status: { conditions: [condition("True", "Ready", "meshcni 0.1.0 chained in 10-calico.conflist; 2 meshed pods: 2 protected")] },
    });
    api.addNode({ metadata: { name: "n2" }, spec: {}, status: { conditions: [] } });
  });
  afterAll(() => api.stop());

  it("answers no with every node's condition: exit 0", async () => {
    const result = await status();
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(/^NODE +MESHCNI READY +REASON +VERSION +MESSAGE$/m);
    expect(result.stdout).toMatch(/^n1 +True +Ready +0\.1\.0 +chained in 10-calico\.conflist; 2 meshed pods: 2 protected$/m);
    expect(result.stdout).toMatch(/^n2 +none *$/m);
    expect(result.stdout.trimEnd().split("\n").at(-1)).toBe(
      "no meshed pod is reported without its redirect; 2 node(s), 0 not ready, 1 without meshcni's condition",
    );
  });

  it("names each meshed pod an agent reported without its redirect: exit 1, as a table and as JSON", async () => {
    api.addNode({
      metadata: { name: "n1" },
      spec: {},
      status: {
        conditions: [
          condition(
            "True",
            "PodsUnprotected",
            "meshcni 0.1.0 chained in 10-calico.conflist; 2 meshed pods: 1 protected, 1 missing; 1 unprotected: shop/web",
          ),
        ],
      },
    });
    api.addPod(podObject("shop", "web", { proxy: "container", nodeName: "n1" }));
    api.events.push({
      metadata: { name: "web.1", namespace: "shop" },
      involvedObject: { kind: "Pod", namespace: "shop", name: "web", uid: "uid-shop-web" },
      reason: "MeshRedirectMissing",
      type: "Warning",
      message: "This pod runs without meshcni's redirect. meshcni takes no action (--repair=none): restart the pod to get the redirect.",
      lastTimestamp: "2026-11-25T10:05:00Z",
      // As the pod's node's agent reports it: status believes no other.
      reportingComponent: "meshcni",
      reportingInstance: "n1",
    });
    const result = await status();
    expect(result.exitCode).toBe(1);
    expect(result.stdout).toMatch(/^shop +web +n1 +MeshRedirectMissing +This pod runs without meshcni's redirect\./m);
    const json = await status("--output", "json");
    expect(json.exitCode).toBe(1);
    expect(JSON.parse(json.stdout).unprotected).toEqual([
      expect.objectContaining({
        namespace: "shop",
        name: "web",
        node: "n1",
        reason: "MeshRedirectMissing",
        at: "2026-11-25T10:05:00.000Z",
      }),
    ]);
  });

  it("says what is wrong in one line, exit 2: a bad flag, an API server it cannot reach", async () => {
    const bad = await status("--output", "yaml");
    expect([bad.exitCode, bad.stderr]).toEqual([
      2,
      'meshcni status: --output must be one of table, json, not "yaml" (see meshcni status --help)',
    ]);
    const gone = `${kubeconfig}-gone`;
    writeFileSync(gone, readFileSync(kubeconfig, "utf8").replace(`127.0.0.1:${api.port}`, "127.0.0.1:1"));
    const unreachable = await execa(meshcniBinary, ["status", "--kubeconfig", gone], { reject: false });
    expect(unreachable.exitCode).toBe(2);
    expect(unreachable.stderr).toMatch(/^meshcni status: .*ECONNREFUSED[^\n]*$/);
  });
});
