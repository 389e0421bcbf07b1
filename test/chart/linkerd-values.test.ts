import type { IDaemonSet } from "kubernetes-models/apps/v1";
import type { IConfigMap, IServiceAccount } from "kubernetes-models/v1";
import { describe, expect, it } from "vitest";
import { parseNetConf } from "../../src/mesh/netconf.js";
import { chartDir, helm, helmTemplate, type K8sObject, objectIn, renderedObjects, valuesFile } from "../kit/chart/helm.js";
import { type LinkerdCniValues, linkerdChartLinkerdSection, linkerdCniValues } from "../kit/linkerd/chart.js";
import { expectValid } from "../kit/manifests/k8s-schema.js";

const daemonSetOf = (objects: K8sObject[]) => objectIn<IDaemonSet>(objects, "DaemonSet");
const podSpec = (objects: K8sObject[]) => daemonSetOf(objects).spec!.template.spec!;
const agent = (objects: K8sObject[]) => podSpec(objects).containers[0]!;
const netconfOf = (objects: K8sObject[]) =>
  JSON.parse(objectIn<IConfigMap>(objects, "ConfigMap", "meshcni-config").data!.cni_network_config!);

/** A migrating operator's values file: linkerd2-cni's whole values.yaml with their changes over it. */
const migrating: LinkerdCniValues = {
  ...linkerdCniValues,
  inboundProxyPort: 4000,
  outboundProxyPort: 4001,
  ignoreInboundPorts: "22,3306,9000-9100",
  ignoreOutboundPorts: "25,587",
  proxyAdminPort: 4191,
  proxyControlPort: 4190,
  portsToRedirect: "80,443,8080",
  proxyUID: 2103,
  proxyGID: 2104,
  logLevel: "debug",
  iptablesMode: "legacy",
  disableIPv6: false,
  useWaitFlag: true,
};

/** `helm install --dry-run=client`: what the operator sees after an install (the NOTES), with no cluster. */
async function installNotes(values: unknown): Promise<string> {
  const run = await helm(["install", "meshcni", chartDir, "--namespace", "meshcni", "--dry-run=client", "--values", valuesFile(values)]);
  expect(run.exitCode, run.stderr).toBe(0);
  return run.stdout.slice(run.stdout.indexOf("NOTES:"));
}

describe("linkerd2-cni's values, taken unchanged", () => {
  it("accepts linkerd2-cni's whole values.yaml, and renders the netconf that chart renders, as meshcni's", async () => {
    const objects = await renderedObjects(linkerdCniValues);
    const netconf = netconfOf(objects);
    expect(netconf).toMatchObject({ name: "meshcni", type: "meshcni", log_level: "info" });
    expect(netconf.linkerd).toEqual(linkerdChartLinkerdSection(linkerdCniValues));
    // The plugin's own reading accepts it.
    expect(() => parseNetConf(JSON.stringify({ cniVersion: "1.0.0", ...netconf }))).not.toThrow();
  });

  it("gives a migrating operator's changed ports, lists, IDs and modes the same netconf as linkerd2-cni's chart", async () => {
    const objects = await renderedObjects(migrating);
    expect(netconfOf(objects).linkerd).toEqual(linkerdChartLinkerdSection(migrating));
    expect(netconfOf(objects).log_level).toBe("debug");
    expect(agent(objects).args).toEqual(expect.arrayContaining(["--log-level", "debug"]));
  });

  it("puts every Kubernetes setting where linkerd2-cni's chart puts it", async () => {
    const objects = await renderedObjects({
      ...linkerdCniValues,
      podLabels: { "example.com/pod": "agent" },
      commonLabels: { team: "platform" },
      destCNINetDir: "/etc/kubernetes/cni/net.d",
      destCNIBinDir: "/opt/kubernetes/cni/bin",
      priorityClassName: "mesh-critical",
      revisionHistoryLimit: 3,
      updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: "20%" } },
      privileged: true,
      tolerations: [{ key: "dedicated", operator: "Exists", effect: "NoSchedule" }],
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchExpressions: [{ key: "mesh", operator: "In", values: ["enabled"] }] }],
        },
      },
      image: { name: "registry.example/mirror/meshcni", version: "0.1.0", pullPolicy: "Always" },
      imagePullSecrets: [{ name: "registry-login" }],
      extraInitContainers: [{ name: "wait", image: "registry.example/busybox", command: ["true"] }],
      resources: {
        cpu: { limit: "1", request: "100m" },
        memory: { limit: "300Mi", request: "" },
        "ephemeral-storage": { limit: "1Gi", request: "100Mi" },
      },
    });
    expectValid(objects);
    const spec = podSpec(objects);
    const daemonSet = daemonSetOf(objects);
    expect(daemonSet.spec!.template.metadata!.labels).toMatchObject({ "example.com/pod": "agent", team: "platform" });
    expect(daemonSet.spec!.selector.matchLabels).toEqual({ "app.kubernetes.io/name": "meshcni" });
    for (const object of objects)
      expect(object.metadata.labels, `${object.kind}/${object.metadata.name}`).toMatchObject({ team: "platform" });
    expect(agent(objects).env).toEqual(
      expect.arrayContaining([
        { name: "DEST_CNI_NET_DIR", value: "/etc/kubernetes/cni/net.d" },
        { name: "DEST_CNI_BIN_DIR", value: "/opt/kubernetes/cni/bin" },
      ]),
    );
    expect(spec.volumes).toEqual(
      expect.arrayContaining([
        { name: "cni-net-dir", hostPath: { path: "/etc/kubernetes/cni/net.d", type: "DirectoryOrCreate" } },
        { name: "cni-bin-dir", hostPath: { path: "/opt/kubernetes/cni/bin", type: "DirectoryOrCreate" } },
      ]),
    );
    expect(spec.priorityClassName).toBe("mesh-critical");
    expect(daemonSet.spec!.revisionHistoryLimit).toBe(3);
    expect(daemonSet.spec!.updateStrategy).toEqual({ type: "RollingUpdate", rollingUpdate: { maxUnavailable: "20%" } });
    expect(agent(objects).securityContext).toEqual({ runAsUser: 0, readOnlyRootFilesystem: true, privileged: true });
    expect(spec.tolerations).toEqual([
      { key: "dedicated", operator: "Exists", effect: "NoSchedule" },
      { key: "meshcni.io/not-ready", operator: "Exists", effect: "NoSchedule" },
    ]);
    expect(
      spec.affinity!.nodeAffinity!.requiredDuringSchedulingIgnoredDuringExecution!.nodeSelectorTerms[0]!.matchExpressions![0]!.key,
    ).toBe("mesh");
    expect(agent(objects).image).toBe("registry.example/mirror/meshcni:0.1.0");
    expect(agent(objects).imagePullPolicy).toBe("Always");
    expect(objectIn<IServiceAccount>(objects, "ServiceAccount").imagePullSecrets).toEqual([{ name: "registry-login" }]);
    expect(spec.initContainers).toEqual([{ name: "wait", image: "registry.example/busybox", command: ["true"] }]);
    expect(agent(objects).resources).toEqual({
      requests: { cpu: "100m", "ephemeral-storage": "100Mi" },
      limits: { cpu: "1", memory: "300Mi", "ephemeral-storage": "1Gi" },
    });
  });

  it("runs meshcni's image where the values name Linkerd's, and says so", async () => {
    const objects = await renderedObjects(linkerdCniValues);
    expect(agent(objects).image).toBe("ghcr.io/meshcni/meshcni:0.1.0");
    expect(await installNotes(linkerdCniValues)).toContain("image.name cr.l5d.io/linkerd/cni-plugin is Linkerd's plugin");
  });

  it("warns of repairController and of logLevel trace by name, and changes nothing for them", async () => {
    const values = { ...linkerdCniValues, logLevel: "trace", repairController: { ...linkerdCniValues.repairController, enabled: true } };
    const notes = await installNotes(values);
    expect(notes).toContain("WARNING: repairController.enabled is linkerd2-cni's");
    expect(notes).toContain("WARNING: logLevel trace is linkerd2-cni's");
    const objects = await renderedObjects(values);
    expect(podSpec(objects).containers.map((container: { name: string }) => container.name)).toEqual(["install"]);
    expect(agent(objects).args).toEqual(expect.arrayContaining(["--repair", "redirect", "--log-level", "debug"]));
    expect(netconfOf(objects).log_level).toBe("debug");
    expect(await installNotes(linkerdCniValues)).not.toContain("repairController");
  });

  it("warns of a netconf inbound-ports-to-ignore that leaves out the proxy's admin and control ports (it replaces the list whole)", async () => {
    const notes = await installNotes({ netconf: { "inbound-ports-to-ignore": ["25"] } });
    expect(notes).toContain(`WARNING: netconf's inbound-ports-to-ignore ["25"] replaces the list whole and leaves out 4191, 4190,`);
    expect(await installNotes({ netconf: { "inbound-ports-to-ignore": [4191, "4190", "25"] } })).not.toContain("inbound-ports-to-ignore");
    expect(await installNotes({ ignoreInboundPorts: "25" })).not.toContain("inbound-ports-to-ignore");
  });

  it("warns that linkerd2-cni's empty priorityClassName leaves the agent without one, and renders none", async () => {
    expect(await installNotes(linkerdCniValues)).toContain("WARNING: no priorityClassName");
    expect(podSpec(await renderedObjects(linkerdCniValues)).priorityClassName).toBeUndefined();
    expect(await installNotes({})).not.toContain("priorityClassName");
    expect(podSpec(await renderedObjects({})).priorityClassName).toBe("system-node-critical");
  });

  it.each([
    [{ enablePSP: true }, "enablePSP: true is refused: PodSecurityPolicy was removed in Kubernetes 1.25"],
    [{ inboundProxyPrt: 4143 }, "inboundProxyPrt"],
    [{ resources: { cpu: { limt: "1" } } }, "limt"],
    [{ inboundProxyPort: "4143x" }, "inboundProxyPort"],
    [{ inboundProxyPort: 70000 }, "inboundProxyPort"],
    [{ ignoreInboundPorts: "22;25" }, "ignoreInboundPorts"],
    [{ portsToRedirect: "80-90" }, "portsToRedirect"],
    [{ logLevel: "panic" }, "logLevel"],
    [{ iptablesMode: "nf" }, "iptablesMode"],
    [{ destCNINetDir: "etc/cni/net.d" }, "destCNINetDir"],
    [{ startupTaint: "meshcni.io/not-ready:Sometimes" }, "startupTaint"],
    [{ repair: "delete" }, "repair"],
    [{ evictNamespaces: ["shop"] }, "evictNamespaces needs repair: evict"],
    [{ repair: "evict" }, "repair: evict needs evictNamespaces"],
    [{ repair: "evict", evictNamespaces: ["kube-system"] }, "evictNamespaces: kube-system's pods are never meshed"],
    [{ netconf: { "incomming-proxy-port": 4000 } }, "incomming-proxy-port"],
    [{ resources: { memory: { limit: "lots" } } }, "limit"],
  ])("refuses %j, naming it", async (values, says) => {
    const rendered = await helmTemplate(values);
    expect(rendered.ok).toBe(false);
    expect(rendered.ok ? "" : rendered.stderr).toContain(says);
  });

  it("passes helm lint --strict, with the defaults and with linkerd2-cni's values", async () => {
    for (const args of [[], ["--values", valuesFile(linkerdCniValues)], ["--values", valuesFile(migrating)]]) {
      const run = await helm(["lint", "--strict", chartDir, ...args]);
      expect(run.exitCode, `${run.stdout}\n${run.stderr}`).toBe(0);
      expect(run.stdout).toContain("0 chart(s) failed");
    }
  });
});

/**
 * What `linkerd check` gets when Linkerd's CNI mode is on (linkerd2 pkg/healthcheck, category
 * linkerd-cni-plugin, all fatal, in --cni-namespace, linkerd-cni by default): the ConfigMap
 * linkerd-cni-config, the ClusterRole, ClusterRoleBinding, ServiceAccount and DaemonSet
 * linkerd-cni. An operator swapping linkerd2-cni's chart for this one keeps the release and
 * namespace linkerd-cni and the values file: the objects then carry Linkerd's names.
 */
describe("installed in linkerd-cni's place (release and namespace linkerd-cni)", () => {
  const checked = [
    "ConfigMap/linkerd-cni-config",
    "ClusterRole/linkerd-cni",
    "ClusterRoleBinding/linkerd-cni",
    "ServiceAccount/linkerd-cni",
    "DaemonSet/linkerd-cni",
  ];

  it("renders every object linkerd check gets, in the namespace it looks in, as meshcni manifests --linkerd-names does", async () => {
    const rendered = await helmTemplate(linkerdCniValues, "linkerd-cni", "linkerd-cni");
    if (!rendered.ok) throw new Error(rendered.stderr);
    const named = rendered.objects.map((object) => `${object.kind}/${object.metadata.name}`);
    expect(named).toEqual(expect.arrayContaining(checked));
    for (const object of rendered.objects.filter((found) => checked.includes(`${found.kind}/${found.metadata.name}`))) {
      if (object.kind !== "ClusterRole" && object.kind !== "ClusterRoleBinding") expect(object.metadata.namespace).toBe("linkerd-cni");
      expect((object.metadata.labels as Record<string, string>)["linkerd.io/cni-resource"], `${object.kind}'s label`).toBe("true");
    }
    const binding = objectIn<{ subjects: Array<{ name: string; namespace: string }> } & K8sObject>(
      rendered.objects,
      "ClusterRoleBinding",
      "linkerd-cni",
    );
    expect(binding.subjects).toEqual([{ kind: "ServiceAccount", name: "linkerd-cni", namespace: "linkerd-cni" }]);
    const daemonSet = objectIn<IDaemonSet>(rendered.objects, "DaemonSet", "linkerd-cni");
    expect(daemonSet.spec!.template.spec!.serviceAccountName).toBe("linkerd-cni");
    const netconf = JSON.parse(objectIn<IConfigMap>(rendered.objects, "ConfigMap", "linkerd-cni-config").data!.cni_network_config!);
    expect(netconf).toMatchObject({ type: "linkerd-cni", name: "linkerd-cni" });
    expect(daemonSet.spec!.template.spec!.containers[0]!.env).toEqual(
      expect.arrayContaining([
        { name: "KUBECONFIG_FILE_NAME", value: "ZZZ-linkerd-cni-kubeconfig" },
        { name: "MESHCNI_CONFIG_MAP", value: "linkerd-cni-config" },
      ]),
    );
    // The node-scope policy holds the agent by its ServiceAccount's name: linkerd-cni's now.
    const policy = objectIn<{ spec: { matchConditions: Array<{ expression: string }> } } & K8sObject>(
      rendered.objects,
      "ValidatingAdmissionPolicy",
      "meshcni-node-scope",
    );
    expect(policy.spec.matchConditions[0]!.expression).toContain("endsWith(':linkerd-cni')");
  });

  it("keeps meshcni's own names for any other release", async () => {
    const named = (await renderedObjects(linkerdCniValues)).map((object) => `${object.kind}/${object.metadata.name}`);
    expect(named).toEqual(expect.arrayContaining(["ConfigMap/meshcni-config", "DaemonSet/meshcni", "ServiceAccount/meshcni"]));
    expect(named.filter((name) => name.includes("linkerd-cni"))).toEqual([]);
  });
});
