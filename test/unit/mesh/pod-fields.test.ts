import type { V1Namespace, V1Pod, V1Service } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { parseNetConf } from "../../../src/mesh/netconf.js";
import {
  decisionFields,
  namespaceDecisionFields,
  namespaceFields,
  podFields,
  readApiServerPorts,
  redirectFamilies,
  serviceDecisionFields,
} from "../../../src/mesh/pod.js";

/** A pod as the API returns it, with everything meshcni does not read. */
const fullPod = (): V1Pod => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: {
    name: "web",
    namespace: "shop",
    uid: "u1",
    resourceVersion: "42",
    labels: { app: "web" },
    annotations: { "config.linkerd.io/skip-outbound-ports": "5432", "kubectl.kubernetes.io/last-applied-configuration": "{…}" },
    ownerReferences: [
      { apiVersion: "apps/v1", kind: "ReplicaSet", name: "web-1", uid: "rs", controller: true },
      { apiVersion: "v1", kind: "ConfigMap", name: "other", uid: "cm" },
    ],
    managedFields: [{ manager: "kubectl" }],
  },
  spec: {
    nodeName: "n1",
    hostNetwork: false,
    containers: [
      { name: "app", image: "app:1", env: [{ name: "SECRET", value: "x" }] },
      { name: "linkerd-proxy", image: "proxy" },
    ],
    initContainers: [{ name: "setup", image: "setup:1" }],
    volumes: [{ name: "data" }],
  },
  status: { phase: "Running", podIP: "10.0.0.5", podIPs: [{ ip: "10.0.0.5" }], conditions: [{ type: "Ready", status: "True" }] },
});

describe("what the agent's cache keeps of a pod", () => {
  it("only what the decision, the audit and the repair read: Linkerd's annotations, controllers, container names", () => {
    expect(podFields(fullPod())).toEqual({
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name: "web",
        namespace: "shop",
        uid: "u1",
        resourceVersion: "42",
        labels: { app: "web" },
        annotations: { "config.linkerd.io/skip-outbound-ports": "5432" },
        ownerReferences: [{ apiVersion: "apps/v1", kind: "ReplicaSet", name: "web-1", uid: "rs", controller: true }],
      },
      spec: {
        nodeName: "n1",
        hostNetwork: false,
        containers: [{ name: "app" }, { name: "linkerd-proxy" }],
        initContainers: [{ name: "setup" }],
      },
      status: { phase: "Running", podIP: "10.0.0.5", podIPs: [{ ip: "10.0.0.5" }] },
    });
  });

  it("keeps a deletion under way; no owners, annotations or init containers when it has none worth keeping", () => {
    const pod = fullPod();
    pod.metadata = { ...pod.metadata, annotations: { "kubectl.kubernetes.io/restartedAt": "now" }, deletionTimestamp: new Date(0) };
    pod.metadata.ownerReferences = [{ apiVersion: "v1", kind: "ConfigMap", name: "other", uid: "cm" }];
    delete pod.spec!.initContainers;
    const kept = podFields(pod);
    expect(kept.metadata).toEqual({
      name: "web",
      namespace: "shop",
      uid: "u1",
      resourceVersion: "42",
      labels: { app: "web" },
      annotations: undefined,
      deletionTimestamp: new Date(0),
    });
    expect(kept.spec).not.toHaveProperty("initContainers");
    expect(podFields({}).spec).toEqual({ nodeName: undefined, hostNetwork: undefined, containers: [] });
  });
});

describe("what the agent sends the plugin", () => {
  it("of a pod: its key, labels, Linkerd's annotations and its containers' names", () => {
    expect(decisionFields(fullPod())).toEqual({
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name: "web",
        namespace: "shop",
        uid: "u1",
        labels: { app: "web" },
        annotations: { "config.linkerd.io/skip-outbound-ports": "5432" },
      },
      spec: { containers: [{ name: "app" }, { name: "linkerd-proxy" }], initContainers: [{ name: "setup" }] },
    });
    expect(decisionFields({ metadata: { name: "bare" } }).spec).toEqual({ containers: [] });
  });

  it("of a namespace: its Linkerd annotations; the cache keeps only those and the name", () => {
    const shop: V1Namespace = {
      metadata: { name: "shop", labels: { team: "a" }, annotations: { "config.linkerd.io/proxy-uid": "999", owner: "team-a" } },
    };
    expect(namespaceDecisionFields(shop)).toEqual({
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: "shop", annotations: { "config.linkerd.io/proxy-uid": "999" } },
    });
    expect(namespaceFields(shop)).toEqual({ metadata: { name: "shop", annotations: { "config.linkerd.io/proxy-uid": "999" } } });
    expect(namespaceFields({ metadata: { name: "plain", annotations: { owner: "team-a" } } })).toEqual({ metadata: { name: "plain" } });
  });

  it("of the kubernetes Service: its ports and their targetPorts", () => {
    const service: V1Service = {
      metadata: { name: "kubernetes", namespace: "default", labels: { component: "apiserver" } },
      spec: { clusterIP: "10.96.0.1", ports: [{ name: "https", port: 443, targetPort: 6443, protocol: "TCP" }, { port: 80 }] },
    };
    expect(serviceDecisionFields(service)).toEqual({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "kubernetes", namespace: "default" },
      spec: { ports: [{ port: 443, targetPort: 6443 }, { port: 80 }] },
    });
    expect(serviceDecisionFields({}).spec).toEqual({ ports: [] });
  });
});

describe("the API server's ports and the families to redirect", () => {
  it("reads default/kubernetes; when it cannot, tells why and skips 443 and 6443, unless told to stop", async () => {
    const asked: string[] = [];
    const ports = await readApiServerPorts(async (namespace, name) => {
      asked.push(`${namespace}/${name}`);
      return { spec: { ports: [{ port: 443, targetPort: 6443 }] } };
    });
    expect({ asked, ports }).toEqual({ asked: ["default/kubernetes"], ports: [443, 6443] });
    const denied = new Error("403 Forbidden");
    const heard: unknown[] = [];
    expect(
      await readApiServerPorts(
        async () => Promise.reject(denied),
        (error) => heard.push(error),
      ),
    ).toEqual([443, 6443]);
    expect(heard).toEqual([denied]);
    expect(await readApiServerPorts(async () => Promise.reject(denied))).toEqual([443, 6443]);
    const stop = readApiServerPorts(
      async () => Promise.reject(denied),
      () => {
        throw new Error("the agent stopped answering");
      },
    );
    await expect(stop).rejects.toThrow("the agent stopped answering");
  });

  it("redirects IPv4 always, IPv6 too when the netconf asks or the pod got an IPv6 address", () => {
    const conf = (ipv6: boolean) =>
      parseNetConf(JSON.stringify({ cniVersion: "1.0.0", name: "n", type: "meshcni", linkerd: { ipv6 } })).linkerd;
    expect(redirectFamilies(conf(false), ["10.0.0.5/24"])).toEqual(["ipv4"]);
    expect(redirectFamilies(conf(false), ["10.0.0.5/24", "fd00::5/64"])).toEqual(["ipv4", "ipv6"]);
    expect(redirectFamilies(conf(true), [])).toEqual(["ipv4", "ipv6"]);
  });
});
