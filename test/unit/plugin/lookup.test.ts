import type { V1Pod, V1Service } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { AgentUnavailableError } from "../../../src/agent-socket.js";
import type { KubeReader, KubeReaderOptions } from "../../../src/kube/pod-reader.js";
import { decidePod, lookupPod, namedPod, PodLookupError } from "../../../src/plugin/lookup.js";
import { podObject } from "../../kit/api/server.js";
import { type LogEntry, memoryLogger } from "../../kit/memory-logger.js";
import { FakeNode } from "../../kit/plugin/fake-node.js";
import { pluginRequest } from "../../kit/plugin/requests.js";

const web = { namespace: "shop", name: "web" };
const controlPlane = (annotations: Record<string, string> = {}) =>
  podObject("linkerd", "destination", {
    proxy: "container",
    labels: { "linkerd.io/control-plane-component": "destination" },
    annotations,
  }) as V1Pod;
const everyOverride = {
  "config.linkerd.io/skip-inbound-ports": "80",
  "config.linkerd.io/skip-outbound-ports": "5432",
  "config.linkerd.io/skip-subnets": "10.0.0.0/8",
  "config.linkerd.io/proxy-uid": "2102",
  "config.linkerd.io/proxy-gid": "2102",
};

/** A reader that answers `pod` (or throws `podFailure`) and `service` (or throws `serviceFailure`), counting reads and closes. */
function reader(options: { pod?: V1Pod; podFailure?: Error; namespaceFailure?: Error; service?: V1Service; serviceFailure?: Error }) {
  const seen = { reads: [] as string[], closed: 0 };
  const answer = async <T>(what: string, value: T | undefined, failure: Error | undefined): Promise<T> => {
    seen.reads.push(what);
    if (failure || value === undefined) throw failure ?? new Error("404 Not Found");
    return value;
  };
  const kube: KubeReader = {
    readPod: (namespace, name, uid) => answer(`pod ${namespace}/${name} ${uid ?? "(any uid)"}`, options.pod, options.podFailure),
    readNamespace: (name) => answer(`namespace ${name}`, { metadata: { name } }, options.namespaceFailure),
    readService: (namespace, name) => answer(`service ${namespace}/${name}`, options.service, options.serviceFailure),
    close: () => void seen.closed++,
  };
  return { kube, seen };
}

const linkerd = pluginRequest("ADD").conf.linkerd;

describe("which pod CNI_ARGS names", () => {
  it("is the pod's key, UID included; none (logged, passed through) for a container of no Kubernetes pod", () => {
    const logs: LogEntry[] = [];
    const deps = { ...new FakeNode().deps(), log: memoryLogger(logs) };
    const request = pluginRequest("ADD");
    expect(namedPod({ ...request, env: { ...request.env, args: "K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web;K8S_POD_UID=u1" } }, deps)).toEqual(
      {
        ...web,
        uid: "u1",
      },
    );
    expect(logs).toEqual([]);
    expect(namedPod(request, deps)).toBeUndefined();
    expect(logs).toEqual([
      { level: "info", message: "no K8S_POD_NAMESPACE/K8S_POD_NAME in CNI_ARGS: not a Kubernetes pod, passing through", fields: undefined },
    ]);
  });
});

describe("deciding a pod's redirect from what the reader answers", () => {
  it("asks for the pod by the runtime's UID and refuses a pod recreated under another, naming both UIDs", async () => {
    const { kube, seen } = reader({ pod: podObject("shop", "web", { proxy: "container" }) as V1Pod });
    const decision = await decidePod(linkerd, { ...web, uid: "uid-shop-web" }, kube, memoryLogger([]));
    expect(decision.spec?.proxyUid).toBe(2102);
    expect(seen.reads[0]).toBe("pod shop/web uid-shop-web");
    const refused = decidePod(linkerd, { ...web, uid: "uid-old" }, kube, memoryLogger([]));
    await expect(refused).rejects.toThrow(PodLookupError);
    await expect(refused).rejects.toThrow(
      "cannot decide the redirect for pod shop/web: the API server has pod UID uid-shop-web, the runtime asked for uid-old",
    );
    const noUid = reader({ pod: { metadata: { namespace: "shop", name: "web" } } });
    await expect(decidePod(linkerd, { ...web, uid: "u1" }, noUid.kube, memoryLogger([]))).rejects.toThrow(
      "the API server has pod UID (none), the runtime asked for u1",
    );
  });

  it("reads no namespace when the pod sets every override, nor anything but the pod when it is not meshed; closes the reader", async () => {
    const annotated = reader({ pod: podObject("shop", "web", { proxy: "container", annotations: everyOverride }) as V1Pod });
    expect((await decidePod(linkerd, web, annotated.kube, memoryLogger([]))).spec?.outboundPortsToIgnore).toEqual([
      { from: 5432, to: 5432 },
    ]);
    expect(annotated.seen).toEqual({ reads: ["pod shop/web (any uid)"], closed: 1 });
    const plain = reader({ pod: podObject("shop", "web") as V1Pod });
    expect(await decidePod(linkerd, web, plain.kube, memoryLogger([]))).toMatchObject({ spec: undefined });
    expect(plain.seen).toEqual({ reads: ["pod shop/web (any uid)"], closed: 1 });
    const failing = reader({ podFailure: new Error("503 Service Unavailable") });
    await expect(decidePod(linkerd, web, failing.kube, memoryLogger([]))).rejects.toThrow(
      "cannot decide the redirect for pod shop/web: reading pod shop/web: 503 Service Unavailable",
    );
    expect(failing.seen.closed).toBe(1);
  });

  it("names what it could not read (the namespace) and what the API answered (a pod without metadata), as a PodLookupError", async () => {
    const namespaceDown = reader({ pod: podObject("shop", "web", { proxy: "container" }) as V1Pod, namespaceFailure: new Error("429") });
    const failed = await decidePod(linkerd, web, namespaceDown.kube, memoryLogger([])).catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(PodLookupError);
    expect((failed as PodLookupError).name).toBe("PodLookupError");
    expect((failed as PodLookupError).message).toBe("cannot decide the redirect for pod shop/web: reading namespace shop: 429");
    const bare = reader({ pod: {} as V1Pod });
    await expect(decidePod(linkerd, { ...web, uid: "u1" }, bare.kube, memoryLogger([]))).rejects.toThrow(
      "the API server has pod UID (none), the runtime asked for u1",
    );
  });

  it("skips the kubernetes Service's ports outbound for a control-plane pod, each port then its numeric targetPort", async () => {
    const service = {
      spec: {
        ports: [
          { port: 443, targetPort: 6443 },
          { port: 8443, targetPort: "https" },
        ],
      },
    };
    const { kube, seen } = reader({ pod: controlPlane(everyOverride), service });
    const { spec } = await decidePod(linkerd, { namespace: "linkerd", name: "destination" }, kube, memoryLogger([]));
    expect(spec?.outboundPortsToIgnore).toEqual([5432, 443, 6443, 8443].map((port) => ({ from: port, to: port })));
    expect(seen.reads).toEqual(["pod linkerd/destination (any uid)", "service default/kubernetes"]);
  });

  it("skips 443 and 6443 when the Service cannot be read, saying so; gives up when the agent stops answering", async () => {
    const logs: LogEntry[] = [];
    const unreadable = reader({ pod: controlPlane(everyOverride), serviceFailure: new Error("403 Forbidden") });
    const { spec } = await decidePod(linkerd, { namespace: "linkerd", name: "destination" }, unreadable.kube, memoryLogger(logs));
    expect(spec?.outboundPortsToIgnore).toEqual([5432, 443, 6443].map((port) => ({ from: port, to: port })));
    expect(logs).toEqual([
      {
        level: "warn",
        message: "cannot read the kubernetes Service: skipping 443 and 6443, as linkerd-cni does",
        fields: { pod: "linkerd/destination", error: "403 Forbidden" },
      },
    ]);
    const gone = new AgentUnavailableError("/run/meshcni/plugin.sock", "ECONNRESET");
    const agentGone = reader({ pod: controlPlane(everyOverride), serviceFailure: gone });
    await expect(decidePod(linkerd, { namespace: "linkerd", name: "destination" }, agentGone.kube, memoryLogger([]))).rejects.toBe(gone);
    const podGone = reader({ podFailure: gone });
    await expect(decidePod(linkerd, web, podGone.kube, memoryLogger([]))).rejects.toBe(gone);
    expect(agentGone.seen.closed + podGone.seen.closed).toBe(2);
  });
});

describe("looking the pod up through the API server", () => {
  it("gives the reader the netconf's kubeconfig, a deadline timeout_seconds away, and attempts of at most 10 s", async () => {
    const node = new FakeNode();
    node.addPod(podObject("shop", "web", { proxy: "container" }) as V1Pod);
    const asked: KubeReaderOptions[] = [];
    const deps = node.deps();
    const kubeReader = (options: KubeReaderOptions) => {
      asked.push(options);
      return deps.kubeReader(options);
    };
    const spy = { ...deps, kubeReader };
    const conf = (kubernetes: Record<string, unknown>) => ({ pod: ["shop", "web"] as [string, string], conf: { kubernetes } });
    await lookupPod(pluginRequest("ADD", conf({ kubeconfig: "/etc/kube.conf" })), spy, web);
    await lookupPod(pluginRequest("ADD", conf({ timeout_seconds: 2 })), spy, web);
    expect(asked.map(({ kubeconfig, attemptTimeoutMs }) => ({ kubeconfig, attemptTimeoutMs }))).toEqual([
      { kubeconfig: "/etc/kube.conf", attemptTimeoutMs: 10_000 },
      { kubeconfig: "/etc/cni/net.d/ZZZ-meshcni-kubeconfig", attemptTimeoutMs: 2000 },
    ]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(asked.map(({ deadline }) => deadline.aborted)).toEqual([false, false]);
    asked[0]!.onRetry?.(2, "503 Service Unavailable");
    expect(node.logs).toContainEqual({
      level: "warn",
      message: "API request failed, retrying",
      fields: { pod: "shop/web", attempt: 2, cause: "503 Service Unavailable" },
    });
  });

  it("fails with a PodLookupError when no reader can be made, and passes the agent's other failures on", async () => {
    const node = new FakeNode();
    node.kubeconfigProblem = "cannot read kubeconfig /etc/kube.conf: ENOENT";
    await expect(lookupPod(pluginRequest("ADD"), node.deps(), web)).rejects.toThrow(
      new PodLookupError(web, "cannot read kubeconfig /etc/kube.conf: ENOENT"),
    );
    const refused = new Error("the agent refused: netconf invalid");
    const deps = { ...node.deps(), agentReader: async () => Promise.reject(refused) };
    await expect(lookupPod(pluginRequest("ADD", { conf: { agent_socket: "/run/meshcni/plugin.sock" } }), deps, web)).rejects.toBe(refused);
  });
});
