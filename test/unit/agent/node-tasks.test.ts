import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { V1Namespace, V1Pod, V1Taint } from "@kubernetes/client-node";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AgentClient } from "../../../src/agent/credentials.js";
import { type AgentMetrics, createAgentMetrics } from "../../../src/agent/metrics.js";
import { NodeTasks } from "../../../src/agent/node-tasks.js";
import { parseAgentOptions } from "../../../src/agent/options.js";
import type { SweepInput, SweepReport } from "../../../src/audit/contract.js";
import type { NodeApi, WatchHandlers } from "../../../src/kube/node-api.js";
import { askAgent } from "../../kit/agent.js";
import { podObject } from "../../kit/api-server.js";
import { until } from "../../kit/common.js";
import { type LogEntry, memoryLogger } from "../../kit/fake-node.js";

/** The parts of the API NodeTasks uses, in memory: watches the test drives, reads it counts, the node's taints. */
function fakeApi() {
  const state = {
    reads: [] as string[],
    watches: { pods: [] as Array<WatchHandlers<V1Pod>>, namespaces: [] as Array<WatchHandlers<V1Namespace>> },
    stopped: 0,
    taints: [{ key: "meshcni.io/not-ready", effect: "NoSchedule" }] as V1Taint[],
  };
  const unused = async (): Promise<never> => {
    throw new Error("not used by NodeTasks");
  };
  const api: NodeApi = {
    watchPods: async (handlers) => {
      state.watches.pods.push(handlers);
      return async () => void state.stopped++;
    },
    watchNamespaces: async (handlers) => {
      state.watches.namespaces.push(handlers);
      return async () => void state.stopped++;
    },
    readPod: async (namespace, name) => {
      state.reads.push(`pod ${namespace}/${name}`);
      return { apiVersion: "v1", kind: "Pod", ...podObject(namespace, name) } as V1Pod;
    },
    readNamespace: async (name) => {
      state.reads.push(`namespace ${name}`);
      return { apiVersion: "v1", kind: "Namespace", metadata: { name } };
    },
    nodeTaints: async () => ({ taints: state.taints, resourceVersion: "1" }),
    setNodeTaints: async (taints) => {
      state.taints = taints;
    },
    listPods: unused,
    mintToken: unused,
    createPodEvent: unused,
    labelPod: unused,
    evictPod: unused,
    ownerDaemonSet: unused,
  };
  return { api, state };
}

describe("the agent's node tasks", () => {
  let dir: string;
  let logs: LogEntry[];
  let metrics: AgentMetrics;
  let tasks: NodeTasks | undefined;
  const socket = () => join(dir, "agent", "plugin.sock");

  /** NodeTasks whose sweeps run `sweep`: a script that keeps its stdin and prints `report`. */
  const nodeTasks = (report: string) => {
    const script = join(dir, "meshcni");
    writeFileSync(join(dir, "report.json"), report);
    writeFileSync(script, `#!/bin/sh\n[ "$1" = sweep ] || exit 3\ncat > ${dir}/input.json\ncat ${dir}/report.json\n`);
    chmodSync(script, 0o755);
    const env = { POD_NAMESPACE: "meshcni", POD_NAME: "agent-x" };
    const argv = ["--node", "n1", "--host-root", join(dir, "host"), "--startup-taint", "meshcni.io/not-ready", "--audit-seconds", "60"];
    tasks = new NodeTasks("n1", parseAgentOptions(argv, env, script), socket(), memoryLogger(logs), metrics, () => undefined);
    return tasks;
  };
  const client = (api: NodeApi): AgentClient => ({ api, kubeconfig: `kubeconfig-${Math.random()}` });

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "meshcni-tasks-"));
    logs = [];
    metrics = createAgentMetrics();
  });
  afterEach(async () => {
    await tasks?.stop();
    tasks = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  it("answers the plugin from its watches, and through the API for a pod they have not shown or of another UID", async () => {
    const { api, state } = fakeApi();
    nodeTasks("{}").follow(client(api), false);
    await until(() => existsSync(socket()) && state.watches.pods.length === 1, 2000);
    state.watches.pods[0]!.change(podObject("shop", "web", { proxy: "container" }) as V1Pod);
    state.watches.namespaces[0]!.change({ metadata: { name: "shop" } });
    expect(await askAgent(socket(), { get: "pod", namespace: "shop", name: "web", uid: "uid-shop-web" })).toMatchObject({ cached: true });
    expect(await askAgent(socket(), { get: "namespace", name: "shop" })).toMatchObject({ cached: true });
    expect(await askAgent(socket(), { get: "pod", namespace: "shop", name: "web", uid: "a-newer-pod" })).toMatchObject({ cached: false });
    expect(await askAgent(socket(), { get: "pod", namespace: "shop", name: "cart" })).toMatchObject({ cached: false });
    expect(state.reads).toEqual(["pod shop/web", "pod shop/cart"]);
  });

  it("restarts its watches on a new client (a rotated token), and stops them and its socket at the end", async () => {
    const first = fakeApi();
    const second = fakeApi();
    const running = nodeTasks("{}");
    running.follow(client(first.api), false);
    await until(() => first.state.watches.pods.length === 1, 2000);
    running.follow(client(second.api), false);
    await until(() => second.state.watches.pods.length === 1 && first.state.stopped === 2, 2000);
    await running.stop();
    tasks = undefined;
    expect(second.state.stopped).toBe(2);
    await expect(askAgent(socket(), { get: "namespace", name: "shop" })).rejects.toThrow();
  });

  it("once ready, sweeps through `meshcni sweep` with its request and credentials on stdin, counts the report, lifts the taint", async () => {
    const { api, state } = fakeApi();
    const report: SweepReport = {
      node: "n1",
      pods: [
        { namespace: "shop", name: "web", uid: "u1", status: "missing", details: ["no redirect"], action: "redirect", result: "done" },
      ],
      summary: { protected: 0, adopted: 0, missing: 1, drifted: 0, unknown: 0 },
      recordsRemoved: { podGone: 1, netnsGone: 0 },
    };
    const agentClient = client(api);
    nodeTasks(JSON.stringify(report)).follow(agentClient, true);
    await until(async () => (await metrics.registry.getSingleMetric("meshcni_repairs_total")!.get()).values.length > 0, 5000);
    const input = JSON.parse(readFileSync(join(dir, "input.json"), "utf8")) as SweepInput;
    expect(input).toEqual({
      kubeconfig: agentClient.kubeconfig,
      request: {
        node: "n1",
        pods: [],
        policy: "redirect",
        limits: { excludeNamespaces: [], skipUids: [], evictionsLeft: 2 },
        self: { namespace: "meshcni", name: "agent-x" },
        dirs: { hostRoot: join(dir, "host"), stateDir: "/var/run/meshcni", netDir: "/etc/cni/net.d", netnsDirs: ["/var/run/netns"] },
      },
    });
    const gauge = await metrics.registry.getSingleMetric("meshcni_meshed_pods")!.get();
    expect(gauge.values.find((sample) => sample.labels.status === "missing")?.value).toBe(1);
    await until(() => state.taints.length === 0, 2000);
    expect(logs.some((entry) => entry.message === "startup taint removed")).toBe(true);
  });

  it("takes a report that breaks the contract as a standing problem, named once", async () => {
    const { api } = fakeApi();
    nodeTasks(JSON.stringify({ node: "n1", pods: [{ name: "web" }] })).follow(client(api), true);
    await until(() => logs.some((entry) => entry.level === "error"), 5000);
    expect(logs.filter((entry) => entry.level === "error").map((entry) => entry.message)).toEqual([
      expect.stringMatching(/^the sweep's report is malformed: pods\[0\]\.namespace: /),
    ]);
  });
});
