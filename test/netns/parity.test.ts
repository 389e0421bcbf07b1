import type { V1Pod } from "@kubernetes/client-node";
import { execa } from "execa";
import { afterAll, beforeAll, expect, it } from "vitest";
import { FakeApiServer, podObject } from "../kit/api/server.js";
import { inNetnsCommand, meshcniNetconf, podArgs } from "../kit/common.js";
import { linkerdChartNetconf } from "../kit/linkerd/netconf.js";
import { type LinkerdNetconf, type LinkerdPod, linkerdCommands } from "../kit/linkerd/port.js";
import { TestNetwork } from "../kit/netns/network.js";
import { invokePlugin, natRules, pluginEnv } from "../kit/netns/plugin-process.js";
import { meshcniBinary } from "../kit/paths.js";
import { describeAsRoot } from "../kit/root-suites.js";

/** linkerd2-proxy-init at the commit the port in test/kit/linkerd/port.ts follows. */
const source = (path: string, test: string) => `linkerd/linkerd2-proxy-init@183e791 ${path} ${test}`;
const chart = linkerdChartNetconf;

interface ParityCase {
  title: string;
  /** Where Linkerd defines the behaviour: its test, or its plugin's code. */
  from: string;
  netconf: LinkerdNetconf;
  pod: LinkerdPod;
  /** The `kubernetes` Service's targetPort in the API (none: it cannot be read). */
  kubernetesTargetPort?: number;
}

const controlPlane = { "linkerd.io/control-plane-component": "destination" };

/** Cases where meshcni writes exactly what linkerd-cni writes, and the audit adopts a pod linkerd-cni set up. */
const same: ParityCase[] = [
  {
    title: "the chart's defaults",
    from: source(
      "proxy-init/cmd/root_test.go",
      "TestBuildFirewallConfiguration/It produces a FirewallConfiguration for the default config",
    ),
    netconf: chart,
    pod: {},
  },
  {
    title: "ports and ranges, a range of one port written as the port",
    from: source("pkg/iptables/iptables_test.go", "TestMakeMultiportDestinations"),
    netconf: { ...chart, "inbound-ports-to-ignore": ["22-22", "25-27", "33"] },
    pod: {},
  },
  {
    title: "more than 15 ports split into a second multiport rule, a range counting two",
    from: source("pkg/iptables/iptables_test.go", "TestMakeMultiportDestinations_Split"),
    netconf: {
      ...chart,
      "outbound-ports-to-ignore": ["22-23", "25-27", "33-34", "35-35", "37-38", "50-54", "56", "58", "60", "63", "70-72"],
    },
    pod: {},
  },
  {
    title: "an ignored inbound port and an outgoing proxy port, with UID and GID 0: no owner rule",
    from: source("pkg/iptables/iptables_test.go", "TestAddIncomingTrafficRules, TestAddOutgoingTrafficRules"),
    netconf: {
      "incoming-proxy-port": 4143,
      "outgoing-proxy-port": 1234,
      "proxy-uid": 0,
      "proxy-gid": 0,
      "inbound-ports-to-ignore": ["1234"],
    },
    pod: {},
  },
  {
    title: "UID and GID 33",
    from: source(
      "proxy-init/cmd/root_test.go",
      "TestBuildFirewallConfiguration/It produces a FirewallConfiguration for the default config",
    ),
    // The test's other lists are empty (see "different by design" for a netconf without the key).
    netconf: { "incoming-proxy-port": 1234, "outgoing-proxy-port": 2345, "proxy-uid": 33, "proxy-gid": 33, "inbound-ports-to-ignore": [] },
    pod: {},
  },
  {
    title: "a subnet with host bits and trailing space: matched by its network, commented as given",
    from: source("proxy-init/cmd/root_test.go", "TestBuildFirewallConfiguration/Overrides handled properly"),
    netconf: chart,
    pod: { annotations: { "config.linkerd.io/skip-subnets": "1.1.1.1/24 " } },
  },
  {
    title: "listed ports to redirect, each its own rule, a repeat kept",
    from: source("pkg/iptables/iptables.go", "addRulesForInboundPortRedirect (RedirectListedMode)"),
    netconf: { ...chart, "ports-to-redirect": [8080, 9090, 8080] },
    pod: {},
  },
  {
    title: "skip-inbound-ports adds to the netconf's, repeats kept",
    from: source("cni-plugin/main.go", "cmdAdd: config.linkerd.io/skip-inbound-ports appended"),
    netconf: chart,
    pod: { annotations: { "config.linkerd.io/skip-inbound-ports": "4190,8000-8010" } },
  },
  {
    title: "skip-outbound-ports replaces the netconf's",
    from: source("cni-plugin/main.go", "cmdAdd: config.linkerd.io/skip-outbound-ports overrides"),
    netconf: { ...chart, "outbound-ports-to-ignore": ["25"] },
    pod: { annotations: { "config.linkerd.io/skip-outbound-ports": "3306,5432" } },
  },
  {
    title: "skip-subnets replaces the netconf's",
    from: source("cni-plugin/main.go", "cmdAdd: config.linkerd.io/skip-subnets overrides"),
    netconf: { ...chart, "subnets-to-ignore": ["10.9.0.0/16"] },
    pod: { annotations: { "config.linkerd.io/skip-subnets": "192.168.0.0/16" } },
  },
  {
    title: "an empty pod annotation falls back to the namespace's",
    from: source("cni-plugin/main.go", "getAnnotationOverride"),
    netconf: chart,
    pod: {
      annotations: { "config.linkerd.io/skip-outbound-ports": "" },
      namespaceAnnotations: { "config.linkerd.io/skip-outbound-ports": "3306", "config.linkerd.io/proxy-uid": "1337" },
    },
  },
  {
    title: "proxy-uid and proxy-gid annotations",
    from: source("cni-plugin/main.go", "cmdAdd: config.linkerd.io/proxy-uid, proxy-gid overrides"),
    netconf: chart,
    pod: { annotations: { "config.linkerd.io/proxy-uid": "1337", "config.linkerd.io/proxy-gid": "1338" } },
  },
  ...(
    [
      ["pod-redirects-all-ports", {}],
      ["pod-redirects-whitelisted", { "ports-to-redirect": [9090, 9099] }],
      ["pod-doesnt-redirect-blacklisted", { "inbound-ports-to-ignore": ["6000-8000"] }],
      ["pod-ignores-subnets", { "subnets-to-ignore": ["0.0.0.0/0"] }],
    ] as Array<[string, Partial<LinkerdNetconf>]>
  ).map(([lab, settings]) => ({
    title: `the integration lab's ${lab} (-p 8080 -o 8080 -u 2102 -g 2102)`,
    from: source("proxy-init/integration/iptables/iptablestest-lab.yaml", lab),
    netconf: {
      "incoming-proxy-port": 8080,
      "outgoing-proxy-port": 8080,
      "proxy-uid": 2102,
      "proxy-gid": 2102,
      "inbound-ports-to-ignore": [],
      ...settings,
    },
    pod: {},
  })),
  {
    title: "a control-plane pod skips the kubernetes Service's port and targetPort",
    from: source("cni-plugin/main.go", "getAPIServerPorts"),
    netconf: { ...chart, "outbound-ports-to-ignore": ["25"] },
    pod: { labels: controlPlane, apiServerPorts: ["443", "6443"] },
    kubernetesTargetPort: 6443,
  },
  {
    title: "a control-plane pod on a managed cluster (targetPort 443): 443 twice",
    from: source("cni-plugin/main.go", "getAPIServerPorts"),
    netconf: chart,
    pod: { labels: controlPlane, apiServerPorts: ["443", "443"] },
    kubernetesTargetPort: 443,
  },
  {
    title: "a control-plane pod when the kubernetes Service cannot be read: 443 and 6443",
    from: source("cni-plugin/main.go", 'cmdAdd: skippedPorts = []string{"443", "6443"}'),
    netconf: chart,
    pod: { labels: controlPlane },
  },
  {
    title: "a control-plane label with an empty value is no control-plane pod",
    from: source("cni-plugin/main.go", "cmdAdd: linkerd.io/control-plane-component"),
    netconf: chart,
    pod: { labels: { "linkerd.io/control-plane-component": "" } },
  },
];

/** Where meshcni refuses or reads an input otherwise on purpose: what linkerd-cni does, and what meshcni does instead. */
const byDesign: Array<ParityCase & { linkerd: string; meshcni: { code: number; says: string } | { ports: string } }> = [
  {
    title: "a port token that is no number",
    from: source("pkg/iptables/iptables_test.go", "TestMakeMultiportDestinations (not-a-number dropped)"),
    netconf: chart,
    pod: { annotations: { "config.linkerd.io/skip-outbound-ports": "22,not-a-number,33" } },
    linkerd: "22,33",
    meshcni: { code: 7, says: 'skip-outbound-ports has invalid value "not-a-number"' },
  },
  {
    title: "port 0",
    from: source("pkg/util/portrange_test.go", "TestParsePortRange (0-65535)"),
    netconf: chart,
    pod: { annotations: { "config.linkerd.io/skip-outbound-ports": "0-65535" } },
    linkerd: "0:65535",
    meshcni: { code: 7, says: 'skip-outbound-ports has invalid value "0-65535"' },
  },
  {
    title: "a port after a comma and a space",
    from: source("pkg/util/portrange.go", "ParsePortRange (strconv.Atoi refuses ' 443')"),
    netconf: chart,
    pod: { annotations: { "config.linkerd.io/skip-outbound-ports": "80, 443" } },
    linkerd: "80",
    meshcni: { ports: "80,443" },
  },
];

/**
 * meshcni against linkerd-cni, rule for rule: for each case, linkerd-cni's commands (its
 * port) in one netns and the compiled plugin's ADD in another, both read back with
 * iptables-nft-save; then `meshcni audit` on the pod linkerd-cni set up must say adopted.
 */
describeAsRoot("parity with linkerd-cni's rules", () => {
  const api = new FakeApiServer();
  const net = new TestNetwork(85);
  let kubeconfig = "";
  let criSocket = "";
  let count = 0;

  beforeAll(async () => {
    await api.start();
    kubeconfig = api.writeKubeconfig();
    criSocket = await net.criSocket();
  });
  afterAll(async () => {
    await net.cleanup();
    await api.stop();
  });

  /** The pod in the API (its node, an address, its labels and annotations, its namespace's). */
  const podFor = (name: string, pod: LinkerdPod) => {
    api.addNamespace({ metadata: { name: `ns-${name}`, annotations: pod.namespaceAnnotations ?? {} } });
    const object = podObject(`ns-${name}`, name, {
      proxy: "container",
      nodeName: "node-p",
      podIP: `10.251.85.${10 + count}`,
      annotations: pod.annotations ?? {},
      labels: pod.labels ?? {},
    });
    api.addPod(object);
    return object as V1Pod;
  };

  it.each(same.map((parity) => [parity.title, parity] as const))("%s", async (_title, parity) => {
    const name = `p${count++}`;
    api.services.clear();
    if (parity.kubernetesTargetPort !== undefined) api.addKubernetesService(parity.kubernetesTargetPort);
    const pod = podFor(name, parity.pod);
    const linkerd = await net.addNetns(`l${name}`);
    const [command, ...prefix] = inNetnsCommand(linkerd);
    for (const args of linkerdCommands(parity.netconf, parity.pod))
      await execa(command!, [...prefix, "iptables-nft", "-t", "nat", ...args]);
    const meshcni = await net.addNetns(`m${name}`);
    const conf = meshcniNetconf({ stateDir: net.stateDir, kubeconfig, linkerd: { ...parity.netconf } });
    const added = await invokePlugin(pluginEnv(net.netnsPath(meshcni), name, podArgs(`ns-${name}`, name)), conf);
    expect(added.exitCode, `${parity.from}\n${added.stdout}${added.stderr}`).toBe(0);
    expect(await natRules(meshcni, "nft"), parity.from).toEqual(await natRules(linkerd, "nft"));
    // meshcni's own attachment goes (its record would speak for the pod); the audit adopts what linkerd-cni wrote.
    expect(
      (await invokePlugin(pluginEnv(net.netnsPath(meshcni), name, podArgs(`ns-${name}`, name), { CNI_COMMAND: "DEL" }), conf)).exitCode,
    ).toBe(0);
    net.runtime.sandboxes.set(String(pod.metadata?.uid), net.netnsPath(linkerd));
    net.writeConflist("mesh", { kubernetes: { kubeconfig }, linkerd: { ...parity.netconf, "iptables-mode": "nft" } });
    const audit = await execa(
      meshcniBinary,
      [
        "audit",
        "--node",
        "node-p",
        "--kubeconfig",
        kubeconfig,
        "--state-dir",
        net.stateDir,
        "--net-dir",
        net.confDir,
        "--cri-socket",
        criSocket,
      ].concat(["--pod", `ns-${name}/${name}`, "--output", "json"]),
      { reject: false },
    );
    expect(JSON.parse(audit.stdout).pods, `${parity.from}\n${audit.stderr}`).toEqual([
      expect.objectContaining({ name, status: "adopted" }),
    ]);
  });

  it.each(byDesign.map((parity) => [parity.title, parity] as const))("by design, %s", async (_title, parity) => {
    const name = `p${count++}`;
    podFor(name, parity.pod);
    const outbound = linkerdCommands(parity.netconf, parity.pod).find(
      (args) => args[1] === "PROXY_INIT_OUTPUT" && args.includes("--dports"),
    );
    expect(outbound?.[outbound.indexOf("--dports") + 1], parity.from).toBe(parity.linkerd);
    const netns = await net.addNetns(`m${name}`);
    const conf = meshcniNetconf({ stateDir: net.stateDir, kubeconfig, linkerd: { ...parity.netconf } });
    const added = await invokePlugin(pluginEnv(net.netnsPath(netns), name, podArgs(`ns-${name}`, name)), conf);
    if ("code" in parity.meshcni) {
      expect(added.json).toMatchObject({ code: parity.meshcni.code });
      expect(String(added.json?.msg)).toContain(parity.meshcni.says);
      expect(await natRules(netns, "nft")).toEqual([]);
    } else {
      expect(added.exitCode, added.stdout).toBe(0);
      expect((await natRules(netns, "nft")).join("\n")).toContain(`--dports ${parity.meshcni.ports} `);
    }
  });

  it("both refuse a subnet without a prefix length (0.0.0.0)", async () => {
    const pod: LinkerdPod = { annotations: { "config.linkerd.io/skip-subnets": "1.1.1.1/24,0.0.0.0" } };
    // proxy-init/cmd/root_test.go TestBuildFirewallConfiguration/It rejects invalid config options.
    expect(() => linkerdCommands(chart, pod)).toThrow("0.0.0.0 is not a valid CIDR address");
    const name = `p${count++}`;
    podFor(name, pod);
    const netns = await net.addNetns(`m${name}`);
    const added = await invokePlugin(
      pluginEnv(net.netnsPath(netns), name, podArgs(`ns-${name}`, name)),
      meshcniNetconf({ stateDir: net.stateDir, kubeconfig, linkerd: { ...chart } }),
    );
    expect(added.json).toMatchObject({ code: 7 });
    expect(String(added.json?.msg)).toContain('skip-subnets has invalid value "0.0.0.0"');
  });

  it("by design, a netconf without inbound-ports-to-ignore still ignores the proxy's admin ports (Linkerd's chart always writes the key)", async () => {
    const { "inbound-ports-to-ignore": _chartPorts, ...without } = chart;
    expect(linkerdCommands(without, {}).some((args) => args.includes("--dports"))).toBe(false);
    const name = `p${count++}`;
    podFor(name, {});
    const netns = await net.addNetns(`m${name}`);
    const conf = meshcniNetconf({ stateDir: net.stateDir, kubeconfig, linkerd: { ...without } });
    expect((await invokePlugin(pluginEnv(net.netnsPath(netns), name, podArgs(`ns-${name}`, name)), conf)).exitCode).toBe(0);
    expect((await natRules(netns, "nft")).join("\n")).toContain("--dports 4191,4190 ");
  });
});
