import type { V1Namespace, V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { parseNetConf } from "../../../src/mesh/netconf.js";
import {
  AnnotationError,
  apiServerPortsOf,
  firewallSpecFor,
  isControlPlane,
  isMeshed,
  needsNamespaceAnnotations,
} from "../../../src/mesh/pod.js";
import { maxAnnotationTokens } from "../../../src/mesh/tokens.js";
import { toCniError } from "../../../src/plugin/failure.js";
import { podObject } from "../../kit/api/server.js";

const linkerd = parseNetConf(JSON.stringify({ cniVersion: "1.0.0", name: "n", type: "meshcni" })).linkerd;
const pod = (options: Parameters<typeof podObject>[2] = {}) => podObject("shop", "web", { proxy: "container", ...options }) as V1Pod;
const namespace = (annotations: Record<string, string>): V1Namespace => ({ metadata: { name: "shop", annotations } });
const ports = (...list: Array<number | [number, number]>) =>
  list.map((entry) => (Array.isArray(entry) ? { from: entry[0], to: entry[1] } : { from: entry, to: entry }));

describe("meshed pods", () => {
  it("is meshed with a linkerd-proxy container or native sidecar", () => {
    expect(isMeshed(pod())).toBe(true);
    expect(isMeshed(pod({ proxy: "native-sidecar" }))).toBe(true);
  });

  it("is not meshed without the proxy, or when linkerd-init programs iptables itself", () => {
    expect(isMeshed(pod({ proxy: false }))).toBe(false);
    expect(isMeshed(pod({ init: true }))).toBe(false);
  });

  it("reads a pod or namespace that comes without metadata, labels, spec or containers as one that has none", () => {
    expect([{}, { metadata: { name: "bare" } }, { spec: { containers: [] } }].map((bare: V1Pod) => isMeshed(bare))).toEqual([
      false,
      false,
      false,
    ]);
    expect([{}, { metadata: {} }].map((bare: V1Pod) => isControlPlane(bare))).toEqual([false, false]);
    expect(needsNamespaceAnnotations({})).toBe(true);
    const sparse = { spec: { containers: [{ name: "linkerd-proxy" }] } };
    expect(firewallSpecFor(linkerd, sparse, {}, [443])).toEqual(firewallSpecFor(linkerd, pod(), undefined, []));
  });
});

describe("annotations", () => {
  it("gives the netconf's firewall when nothing overrides it", () => {
    expect(firewallSpecFor(linkerd, pod(), undefined, [])).toEqual({
      inboundProxyPort: 4143,
      outboundProxyPort: 4140,
      proxyUid: 2102,
      portsToRedirect: [],
      inboundPortsToIgnore: ports(4191, 4190),
      outboundPortsToIgnore: [],
      subnetsToIgnore: [],
    });
  });

  it("adds skip-inbound-ports to the defaults, replaces outbound ignores, reads subnets, uid and gid, trimmed", () => {
    const spec = firewallSpecFor(
      { ...linkerd, "outbound-ports-to-ignore": ports(25) },
      pod({
        annotations: {
          "config.linkerd.io/skip-inbound-ports": "80, 443 ,8000-8010,",
          "config.linkerd.io/skip-outbound-ports": "3306, 5432-5440",
          "config.linkerd.io/skip-subnets": " 10.1.2.3/16 , fd00:0:0:1::5/64",
          "config.linkerd.io/proxy-uid": " 1234 ",
          "config.linkerd.io/proxy-gid": "5678",
        },
      }),
      undefined,
      [],
    );
    expect(spec.inboundPortsToIgnore).toEqual(ports(4191, 4190, 80, 443, [8000, 8010]));
    expect(spec.outboundPortsToIgnore).toEqual(ports(3306, [5432, 5440]));
    // As given (trimmed): the comment says so; the rule's -s is the network (plan.ts).
    expect(spec.subnetsToIgnore).toEqual(["10.1.2.3/16", "fd00:0:0:1::5/64"]);
    expect(spec.proxyUid).toBe(1234);
    expect(spec.proxyGid).toBe(5678);
  });

  it("takes the netconf's proxy-gid when no annotation sets one", () => {
    expect(firewallSpecFor({ ...linkerd, "proxy-gid": 2103 }, pod(), undefined, []).proxyGid).toBe(2103);
    expect(firewallSpecFor(linkerd, pod(), undefined, [])).not.toHaveProperty("proxyGid");
  });

  it("falls back to the namespace's annotations, the pod's winning", () => {
    const spec = firewallSpecFor(
      linkerd,
      pod({ annotations: { "config.linkerd.io/skip-outbound-ports": "5432" } }),
      namespace({ "config.linkerd.io/skip-outbound-ports": "3306", "config.linkerd.io/proxy-uid": "999" }),
      [],
    );
    expect(spec.outboundPortsToIgnore).toEqual(ports(5432));
    expect(spec.proxyUid).toBe(999);
  });

  it("needs the namespace only while some override is missing on the pod", () => {
    expect(needsNamespaceAnnotations(pod())).toBe(true);
    const all = {
      "config.linkerd.io/skip-inbound-ports": "80",
      "config.linkerd.io/skip-outbound-ports": "80",
      "config.linkerd.io/skip-subnets": "10.0.0.0/8",
      "config.linkerd.io/proxy-uid": "2102",
      "config.linkerd.io/proxy-gid": "2102",
    };
    expect(needsNamespaceAnnotations(pod({ annotations: all }))).toBe(false);
    // An empty value is no override (linkerd-cni's getAnnotationOverride): the namespace's applies.
    expect(needsNamespaceAnnotations(pod({ annotations: { ...all, "config.linkerd.io/skip-subnets": "" } }))).toBe(true);
  });

  it("takes an empty pod annotation for none: the namespace's applies, else the netconf's", () => {
    const empty = pod({ annotations: { "config.linkerd.io/skip-outbound-ports": "", "config.linkerd.io/skip-subnets": "" } });
    const spec = firewallSpecFor(
      { ...linkerd, "outbound-ports-to-ignore": ports(25), "subnets-to-ignore": ["10.9.0.0/16"] },
      empty,
      namespace({ "config.linkerd.io/skip-outbound-ports": "3306" }),
      [],
    );
    expect(spec.outboundPortsToIgnore).toEqual(ports(3306));
    expect(spec.subnetsToIgnore).toEqual(["10.9.0.0/16"]);
  });

  it("replaces the netconf's subnets with skip-subnets, as linkerd-cni does, repeats and all", () => {
    const spec = firewallSpecFor(
      { ...linkerd, "subnets-to-ignore": ["10.9.0.0/16"] },
      pod({ annotations: { "config.linkerd.io/skip-subnets": "1.1.1.1/24,1.1.1.1/24" } }),
      undefined,
      [],
    );
    expect(spec.subnetsToIgnore).toEqual(["1.1.1.1/24", "1.1.1.1/24"]);
  });

  it("skips the API server's ports outbound for control-plane pods (a label with a value), in the Service's order, repeats kept", () => {
    const controlPlane = pod({ labels: { "linkerd.io/control-plane-component": "destination" } });
    expect(firewallSpecFor(linkerd, controlPlane, undefined, [443, 443]).outboundPortsToIgnore).toEqual(ports(443, 443));
    const unlabelled = pod({ labels: { "linkerd.io/control-plane-component": "" } });
    expect(firewallSpecFor(linkerd, unlabelled, undefined, [443, 6443]).outboundPortsToIgnore).toEqual([]);
  });

  it("reads the API server's ports from the kubernetes Service as linkerd-cni does: each port, then its numeric targetPort", () => {
    const service = (ports: Array<{ port: number; targetPort?: number | string }>) => ({ spec: { ports } });
    expect(apiServerPortsOf(service([{ port: 443, targetPort: 6443 }]))).toEqual([443, 6443]);
    expect(apiServerPortsOf(service([{ port: 443, targetPort: 443 }]))).toEqual([443, 443]);
    expect(apiServerPortsOf(service([{ port: 443, targetPort: "https" }]))).toEqual([443]);
    expect(apiServerPortsOf({})).toEqual([]);
  });

  it.each([
    ["config.linkerd.io/skip-inbound-ports", "80,http", '"http"'],
    ["config.linkerd.io/skip-inbound-ports", "80\n-A OUTPUT -j ACCEPT", '"80\\n-A OUTPUT -j ACCEPT"'],
    ["config.linkerd.io/skip-outbound-ports", "0", '"0"'],
    ["config.linkerd.io/skip-outbound-ports", "443-80", '"443-80"'],
    ["config.linkerd.io/skip-subnets", "10.0.0.0/8;10.1.0.0/16", '"10.0.0.0/8;10.1.0.0/16"'],
    ["config.linkerd.io/skip-subnets", "10.0.0.0/08", '"10.0.0.0/08"'],
    ["config.linkerd.io/proxy-uid", "linkerd", '"linkerd"'],
    ["config.linkerd.io/proxy-gid", "4294967295", '"4294967295"'],
    ["config.linkerd.io/proxy-uid", "1000,2000", '"1000,2000"'],
    ["config.linkerd.io/proxy-gid", "1000,2000", '"1000,2000"'],
    ["config.linkerd.io/proxy-gid", " linkerd ", '"linkerd"'],
  ])("refuses %s=%j, naming pod, annotation and token; the plugin reports it with code 7", (key, value, token) => {
    let error: unknown;
    try {
      firewallSpecFor(linkerd, pod({ annotations: { [key]: value } }), undefined, []);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(AnnotationError);
    expect(error).toMatchObject({ pod: "shop/web", source: "pod", annotation: key, token: JSON.parse(token) });
    for (const part of ["pod shop/web", key, token]) expect((error as Error).message).toContain(part);
    expect(String(error)).toMatch(/^AnnotationError: pod shop\/web: pod annotation /);
    expect(toCniError(error).code).toBe(7);
  });

  it("takes as many entries as the cap allows, and refuses one more with code 7, naming the annotation, its source and the count", () => {
    const cidrs = (count: number) => Array.from({ length: count }, (_, i) => `10.${i >> 8}.${i & 255}.0/24`).join(",");
    const key = "config.linkerd.io/skip-subnets";
    expect(
      firewallSpecFor(linkerd, pod({ annotations: { [key]: cidrs(maxAnnotationTokens) } }), undefined, []).subnetsToIgnore,
    ).toHaveLength(maxAnnotationTokens);
    for (const [source, make] of [
      ["pod", (value: string) => [pod({ annotations: { [key]: value } }), undefined] as const],
      ["namespace", (value: string) => [pod(), namespace({ [key]: value })] as const],
    ] as const) {
      const [target, its] = make(`${cidrs(maxAnnotationTokens + 1)},`);
      let error: unknown;
      try {
        firewallSpecFor(linkerd, target, its, []);
      } catch (caught) {
        error = caught;
      }
      expect(error).toMatchObject({ source, annotation: key, token: undefined });
      expect((error as Error).message).toContain(
        `pod shop/web: ${source} annotation ${key} has ${maxAnnotationTokens + 1} entries: at most ${maxAnnotationTokens}`,
      );
      expect(toCniError(error).code).toBe(7);
    }
  });

  it("says when the bad value came from the namespace", () => {
    expect(() => firewallSpecFor(linkerd, pod(), namespace({ "config.linkerd.io/skip-subnets": "everything" }), [])).toThrow(
      /namespace annotation config\.linkerd\.io\/skip-subnets/,
    );
  });
});
