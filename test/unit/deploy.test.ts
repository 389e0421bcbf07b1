import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { IDaemonSet } from "kubernetes-models/apps/v1";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { parseAgentOptions } from "../../src/agent/options.js";
import { renderTemplate } from "../../src/installer/template.js";
import { parseManifestArgs } from "../../src/manifests/main.js";
import { defaultManifestOptions, type ManifestOptions } from "../../src/manifests/options.js";
import { clusterRules, pluginServiceAccount } from "../../src/manifests/rbac.js";
import { manifestFiles, manifestsYaml } from "../../src/manifests/yaml.js";
import { linkerdDefaults } from "../../src/mesh/defaults.js";
import { parseNetConf } from "../../src/mesh/netconf.js";
import { manifestKinds } from "../kit/fixtures.js";
import { expectValid } from "../kit/k8s-schema.js";

const deployDir = join(import.meta.dirname, "../../deploy");

type Manifest = { kind: string; metadata: { name: string; namespace?: string }; [key: string]: unknown };

function parseYaml(text: string, source: string): Manifest[] {
  return parseAllDocuments(text).map((doc) => {
    if (doc.errors.length > 0) throw new Error(`${source}: ${doc.errors[0]!.message}`);
    return doc.toJS() as Manifest;
  });
}

const load = (file: string) => parseYaml(readFileSync(join(deployDir, file), "utf8"), file);
const rendered = (argv: string[]) => parseYaml(manifestsYaml(parseManifestArgs(argv)), `meshcni manifests ${argv.join(" ")}`);

/** The agent's container and its settings as the DaemonSet gives them: its args and the env values it sets. */
function agentOf(manifests: Manifest[]) {
  const daemonSet = manifests.find((manifest) => manifest.kind === "DaemonSet") as unknown as IDaemonSet;
  const podSpec = daemonSet.spec!.template.spec!;
  const container = podSpec.containers[0]!;
  const env = container.env ?? [];
  const options = parseAgentOptions(
    container.args ?? [],
    Object.fromEntries(env.flatMap((variable) => (variable.value === undefined ? [] : [[variable.name, variable.value]]))),
    container.command![0]!,
  );
  return { daemonSet, podSpec, container, env, options };
}

/** The netconf template in the manifests' ConfigMap, as the agent's env gets it. */
const netconfText = (manifests: Manifest[]) =>
  (
    manifests.find((manifest) => manifest.kind === "ConfigMap" && manifest.metadata.name === "meshcni-config") as unknown as {
      data: { cni_network_config: string };
    }
  ).data.cni_network_config;

const kustomization = load("kustomization.yaml")[0] as unknown as { resources: string[]; namespace: string };
const deployed = kustomization.resources.flatMap(load);
const byKind = (kind: string) => deployed.filter((manifest) => manifest.kind === kind);
const { podSpec, container, env, options: agent } = agentOf(deployed);

describe("deploy/ and meshcni manifests", () => {
  it("agree: deploy/ is exactly what `meshcni manifests --output-dir` writes with the defaults", () => {
    const files = manifestFiles(defaultManifestOptions);
    expect((readdirSync(deployDir, { recursive: true }) as string[]).filter((name) => name.endsWith(".yaml")).sort()).toEqual(
      files.map((file) => file.name).sort(),
    );
    for (const { name, text } of files)
      expect(readFileSync(join(deployDir, name), "utf8"), `deploy/${name} (npm run manifests)`).toBe(text);
    expect(rendered([])).toEqual(deployed);
  });

  it("lists every manifest in the kustomization", () => {
    const files = readdirSync(deployDir).filter((name) => name.endsWith(".yaml") && name !== "kustomization.yaml");
    expect([...kustomization.resources].sort()).toEqual(files.sort());
  });

  it.each([
    [[]],
    [["--repair", "evict", "--pod-monitor", "--startup-taint", ""]],
    [["--repair", "none", "--namespace", "mesh-system", "--toleration", "dedicated=mesh:NoSchedule", "--node-selector", "pool=mesh"]],
    [["--label", "team=net", "--netconf", "proxy-uid=1337", "--memory-limit", "512Mi", "--priority-class", "system-cluster-critical"]],
    [["--prometheus-rule", "--grafana-dashboard", "--pod-monitor"]],
  ])("renders objects valid against the Kubernetes schemas: %j", (argv) => {
    const manifests = rendered(argv);
    expectValid(manifests);
    expect(manifests.map((manifest) => manifest.kind)).toEqual([
      // Another --namespace must exist: its Namespace only with --create-namespace.
      ...manifestKinds.filter((kind) => kind !== "Namespace" || !argv.includes("--namespace")),
      ...(argv.includes("--pod-monitor") ? ["PodMonitor"] : []),
      ...(argv.includes("--prometheus-rule") ? ["PrometheusRule"] : []),
      ...(argv.includes("--grafana-dashboard") ? ["ConfigMap"] : []),
    ]);
    // The agent accepts the args the DaemonSet gives it.
    expect(() => agentOf(manifests)).not.toThrow();
  });

  it("validates deploy/ against the Kubernetes schemas", () => expectValid(deployed));

  it("ships the alerts and the dashboard as kustomize components, listed when asked for", () => {
    for (const component of ["prometheus-rule", "grafana-dashboard"]) {
      const [own] = load(`components/${component}/kustomization.yaml`) as unknown as Array<{ kind: string; resources: string[] }>;
      expect(own!.kind).toBe("Component");
      expectValid(own!.resources.flatMap((file) => load(`components/${component}/${file}`)));
    }
    const [dashboard] = load("components/grafana-dashboard/configmap.yaml") as unknown as Array<{
      metadata: { labels: Record<string, string> };
      data: Record<string, string>;
    }>;
    expect(dashboard!.metadata.labels.grafana_dashboard).toBe("1");
    expect(JSON.parse(dashboard!.data["meshcni.json"]!).panels.length).toBeGreaterThanOrEqual(10);
    expect((kustomization as { components?: string[] }).components).toBeUndefined();
    const withAlerts = manifestFiles({ ...defaultManifestOptions, prometheusRule: true }).find(
      (file) => file.name === "kustomization.yaml",
    )!;
    expect(parseYaml(withAlerts.text, "kustomization.yaml")[0]).toMatchObject({ components: ["components/prometheus-rule"] });
  });

  it("runs on every Linux node, on the host network, with the host dirs mounted where the agent looks", () => {
    expect(podSpec.hostNetwork).toBe(true);
    expect(podSpec.nodeSelector).toEqual({ "kubernetes.io/os": "linux" });
    expect(podSpec.tolerations).toEqual([{ operator: "Exists" }]);
    expect(podSpec.securityContext?.seccompProfile).toEqual({ type: "RuntimeDefault" });
    const mounts = container.volumeMounts!.map((mount) => mount.mountPath);
    const { hostRoot, netDir, binDir } = agent.install;
    expect(mounts).toContain(`${hostRoot}${netDir}`);
    expect(mounts).toContain(`${hostRoot}${binDir}`);
    const hostPaths = podSpec.volumes!.map((volume) => volume.hostPath?.path);
    expect(hostPaths).toEqual(expect.arrayContaining([netDir, binDir]));
  });

  it("serves /readyz, /healthz and /metrics on a named port the probes and Prometheus use", () => {
    expect(agent.listen).toEqual({ host: "", port: 9911 });
    expect(container.ports).toEqual([{ name: "metrics", containerPort: 9911, protocol: "TCP" }]);
    expect(container.readinessProbe!.httpGet).toEqual({ path: "/readyz", port: "metrics" });
    expect(container.livenessProbe!.httpGet).toEqual({ path: "/healthz", port: "metrics" });
    expect(podSpec).toBeDefined();
    const annotations = agentOf(deployed).daemonSet.spec!.template.metadata!.annotations;
    expect(annotations).toEqual({
      "prometheus.io/scrape": "true",
      "prometheus.io/port": "9911",
      "prometheus.io/path": "/metrics",
      // The netconf's hash: a new one rolls the agents out, as their env reads it at start.
      "checksum/config": createHash("sha256").update(netconfText(deployed)).digest("hex"),
    });
    const monitor = rendered(["--pod-monitor", "--metrics-port", "9100"]);
    expect(monitor.at(-1)).toMatchObject({ kind: "PodMonitor", spec: { podMetricsEndpoints: [{ port: "metrics", path: "/metrics" }] } });
    expect(agentOf(monitor).options.listen).toEqual({ host: "", port: 9100 });
  });

  it("gives the agent its node, its own pod, its log level, and the host's netns and state dirs for the audit", () => {
    const fieldOf = (name: string) => env.find((variable) => variable.name === name)?.valueFrom?.fieldRef?.fieldPath;
    expect([fieldOf("NODE_NAME"), fieldOf("POD_NAME"), fieldOf("POD_NAMESPACE")]).toEqual([
      "spec.nodeName",
      "metadata.name",
      "metadata.namespace",
    ]);
    expect(agent).toMatchObject({
      sweep: { repair: "redirect" },
      onStop: "auto",
      logLevel: "info",
      startupTaint: { spec: { key: "meshcni.io/not-ready", effect: "NoSchedule" } },
    });
    const mounts = Object.fromEntries(container.volumeMounts!.map((mount) => [mount.mountPath, mount]));
    // The sweep writes records (adopted, repaired) and removes stale ones.
    const { hostRoot, stateDir } = agent.install;
    expect(mounts[`${hostRoot}${stateDir}`]!.readOnly).toBeFalsy();
    for (const dir of agent.sweep.netnsDirs) expect(mounts[`${hostRoot}${dir}`]).toMatchObject({ mountPropagation: "HostToContainer" });
    expect(container.securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ["ALL"], add: ["SYS_ADMIN", "NET_ADMIN", "NET_RAW"] },
    });
  });

  it("ships a template that the agent accepts and the plugin parses", () => {
    const configMap = byKind("ConfigMap")[0] as unknown as { metadata: { name: string }; data: { cni_network_config: string } };
    const template = renderTemplate(configMap.data.cni_network_config, "/etc/cni/net.d/ZZZ-meshcni-kubeconfig");
    expect(template.ok).toBe(true);
    const entry = (template as unknown as { entry: { linkerd: unknown } }).entry;
    expect(() => parseNetConf(JSON.stringify({ cniVersion: "1.0.0", ...entry }))).not.toThrow();
    expect(entry.linkerd).toEqual(linkerdDefaults);
    const reference = env.find((variable) => variable.name === "CNI_NETWORK_CONFIG")?.valueFrom?.configMapKeyRef;
    expect(reference).toEqual({ name: configMap.metadata.name, key: "cni_network_config" });
  });

  it("binds the agent's roles to its ServiceAccount, and the plugin's narrow role to the plugin's, whose token only the agent mints", () => {
    const subjects = (kind: string, name: string) =>
      (deployed.find((manifest) => manifest.kind === kind && manifest.metadata.name === name) as unknown as { subjects: unknown[] })
        .subjects;
    const account = (name: string) => [{ kind: "ServiceAccount", name, namespace: kustomization.namespace }];
    expect(subjects("ClusterRoleBinding", "meshcni")).toEqual(account(podSpec.serviceAccountName!));
    expect(subjects("RoleBinding", "meshcni")).toEqual(account(podSpec.serviceAccountName!));
    expect(subjects("ClusterRoleBinding", pluginServiceAccount)).toEqual(account(pluginServiceAccount));
    const plugin = deployed.find(
      (manifest) => manifest.kind === "ClusterRole" && manifest.metadata.name === pluginServiceAccount,
    ) as unknown as { rules: unknown };
    expect(plugin.rules).toEqual([
      { apiGroups: [""], resources: ["pods", "namespaces"], verbs: ["get"] },
      { apiGroups: [""], resources: ["services"], verbs: ["get"], resourceNames: ["kubernetes"] },
    ]);
    const ownNamespace = byKind("Role")[0] as unknown as { rules: unknown[] };
    expect(ownNamespace.rules).toEqual([
      { apiGroups: ["apps"], resources: ["daemonsets"], verbs: ["get"] },
      { apiGroups: [""], resources: ["serviceaccounts/token"], verbs: ["create"], resourceNames: [pluginServiceAccount] },
    ]);
    expect(
      deployed.find((manifest) => manifest.kind === "ServiceAccount" && manifest.metadata.name === pluginServiceAccount),
    ).toMatchObject({
      automountServiceAccountToken: false,
    });
    // The agent's default for --plugin-service-account is that account, in its own namespace.
    expect(agent.pluginToken.serviceAccount).toEqual({ namespace: "meshcni", name: pluginServiceAccount });
  });
});

describe("RBAC sized by what is turned on", () => {
  const verbsOf = (options: Pick<ManifestOptions, "repair" | "startupTaint">) =>
    Object.fromEntries(clusterRules(options).map((rule) => [rule.resources.join(","), rule.verbs.join(",")]));
  const base = {
    pods: "get,list,watch",
    namespaces: "get,list,watch",
    services: "get,list,watch",
    events: "create",
    // Its node read one at a time only to lift the startup taint.
    nodes: "list,watch",
    "nodes/status": "patch",
  };

  it.each([
    ["redirect", undefined, base],
    ["none", undefined, base],
    ["label", undefined, { ...base, pods: "get,list,watch,patch" }],
    ["evict", undefined, { ...base, pods: "get,list,watch,patch", "pods/eviction": "create" }],
    ["redirect", "meshcni.io/not-ready:NoSchedule", { ...base, nodes: "get,list,watch,patch" }],
  ] as const)("--repair %s, startup taint %s", (repair, startupTaint, expected) => {
    expect(verbsOf({ repair, startupTaint })).toEqual(expected);
  });

  it("the deployed ClusterRole is the default's: redirect repair and a startup taint", () => {
    expect((byKind("ClusterRole").find((role) => role.metadata.name === "meshcni") as unknown as { rules: unknown[] }).rules).toEqual(
      clusterRules(defaultManifestOptions),
    );
  });
});

describe("meshcni manifests flags", () => {
  it('renders without a CRI socket (--cri-socket ""): no socket mounted, its comment left out, valid', () => {
    const manifests = rendered(["--cri-socket", ""]);
    const { container: agentContainer } = agentOf(manifests);
    expect(agentContainer.volumeMounts!.map((mount) => mount.name)).not.toContain("cri-socket");
    expectValid(manifests);
  });

  it("comments each mount it explains, wherever the options put it", () => {
    const yaml = manifestsYaml(parseManifestArgs(["--extra-bin-dir", "/usr/lib/cni", "--net-dir", "/etc/cni", "--bin-dir", "/etc/cni"]));
    const lines = yaml.split("\n").map((line) => line.trim());
    // The field a comment (of one or more lines) stands above.
    const commented = (comment: string) =>
      lines.slice(lines.findIndex((line) => line.startsWith(comment))).find((line) => !line.startsWith("#"));
    expect(commented("# Sweeps record adopted")).toBe("- name: meshcni-state");
    expect(commented("# Pod netns are bind mounts")).toBe("- name: netns");
    expect(commented("# The runtime's CRI socket")).toBe("- name: cri-socket");
    expect(commented("# The runtime's other bin dirs")).toBe("- name: cni-bin-dir-1");
  });

  it("mounts a dir that is both the net dir and the bin dir once (Kubernetes refuses two mounts at one path)", () => {
    const { podSpec: spec, container: agentContainer, options } = agentOf(rendered(["--net-dir", "/etc/cni", "--bin-dir", "/etc/cni"]));
    const mountPaths = agentContainer.volumeMounts!.map((mount) => mount.mountPath);
    expect(mountPaths.filter((path) => path === "/host/etc/cni")).toHaveLength(1);
    expect(new Set(mountPaths).size).toBe(mountPaths.length);
    expect(spec.volumes!.filter((volume) => volume.hostPath?.path === "/etc/cni")).toHaveLength(1);
    expect(options.install).toMatchObject({ netDir: "/etc/cni", binDir: "/etc/cni" });
  });

  it("puts each setting everywhere it belongs", () => {
    const manifests = rendered([
      ...["--namespace", "mesh-system", "--image", "registry.local/meshcni:dev", "--log-level", "debug", "--repair", "label"],
      ...["--net-dir", "/etc/cni/multus/net.d", "--bin-dir", "/var/lib/cni/bin", "--netns-dir", "/run/netns"],
      ...["--extra-bin-dir", "/usr/libexec/cni", "--extra-bin-dir", "/usr/lib/cni"],
      ...["--node-selector", "pool=mesh", "--toleration", "dedicated=mesh:NoSchedule", "--label", "team=net"],
      ...["--netconf", 'inbound-ports-to-ignore=["4190","4191","9090"]', "--cpu-request", "50m", "--memory-request", "128Mi"],
    ]);
    const { daemonSet, podSpec: spec, container: agentContainer, options } = agentOf(manifests);
    expect(
      manifests.filter((manifest) => manifest.metadata.namespace !== undefined).map((manifest) => manifest.metadata.namespace),
    ).toEqual(Array(6).fill("mesh-system"));
    expect(agentContainer.image).toBe("registry.local/meshcni:dev");
    expect(options).toMatchObject({
      logLevel: "debug",
      sweep: { repair: "label", netnsDirs: ["/run/netns"] },
      install: { netDir: "/etc/cni/multus/net.d", binDir: "/var/lib/cni/bin", extraBinDirs: ["/usr/libexec/cni", "/usr/lib/cni"] },
    });
    // The extra bin dirs: read-only, and they must be there (a typo is a pod that does not start, not a chain called broken).
    expect(spec.volumes!.filter((volume) => volume.name.startsWith("cni-bin-dir-"))).toEqual([
      { name: "cni-bin-dir-1", hostPath: { path: "/usr/libexec/cni", type: "Directory" } },
      { name: "cni-bin-dir-2", hostPath: { path: "/usr/lib/cni", type: "Directory" } },
    ]);
    expect(agentContainer.volumeMounts!.filter((mount) => mount.name.startsWith("cni-bin-dir-"))).toEqual([
      { name: "cni-bin-dir-1", mountPath: "/host/usr/libexec/cni", readOnly: true },
      { name: "cni-bin-dir-2", mountPath: "/host/usr/lib/cni", readOnly: true },
    ]);
    const hostPaths = spec.volumes!.map((volume) => volume.hostPath?.path);
    expect(hostPaths).toEqual(expect.arrayContaining(["/etc/cni/multus/net.d", "/var/lib/cni/bin", "/run/netns"]));
    expect(agentContainer.volumeMounts!.map((mount) => mount.mountPath)).toEqual(
      expect.arrayContaining(["/host/etc/cni/multus/net.d", "/host/var/lib/cni/bin", "/host/run/netns"]),
    );
    expect(spec.nodeSelector).toEqual({ "kubernetes.io/os": "linux", pool: "mesh" });
    // The operator's, and the startup taint's: the agent that lifts it must run where it is.
    expect(spec.tolerations).toEqual([
      { key: "dedicated", operator: "Equal", value: "mesh", effect: "NoSchedule" },
      { key: "meshcni.io/not-ready", operator: "Exists", effect: "NoSchedule" },
    ]);
    expect(agentContainer.resources).toEqual({ requests: { cpu: "50m", memory: "128Mi" }, limits: { memory: "224Mi" } });
    expect(daemonSet.metadata!.labels).toMatchObject({ team: "net", "app.kubernetes.io/name": "meshcni" });
    const configMap = manifests.find((manifest) => manifest.kind === "ConfigMap") as unknown as { data: { cni_network_config: string } };
    const entry = JSON.parse(configMap.data.cni_network_config);
    expect(entry).toMatchObject({
      log_level: "debug",
      linkerd: { ...linkerdDefaults, "inbound-ports-to-ignore": ["4190", "4191", "9090"] },
    });
  });

  it.each([
    [["--repair", "delete"], '--repair must be one of redirect, evict, label, none, not "delete"'],
    [["--log-level", "verbose"], '--log-level must be one of debug, info, warn, error, not "verbose"'],
    [["--metrics-port", "99999"], '--metrics-port must be a port, not "99999"'],
    [["--node-selector", "pool"], '--node-selector must be KEY=VALUE, not "pool"'],
    [["--toleration", "a:Sometimes"], '--toleration must be KEY[=VALUE][:EFFECT], not "a:Sometimes"'],
    [["--netconf", "proxy-uid=-5"], "--netconf: "],
    [["--netconf", "iptables-mode=ebpf"], "iptables-mode"],
    [["--bogus"], "unknown flag --bogus"],
    [
      ["--extra-bin-dir", "usr/lib/cni"],
      '--extra-bin-dir must be an absolute path on the node (not / and without . or ..), not "usr/lib/cni"',
    ],
    [["--bin-dir", "relative/dir"], '--bin-dir must be an absolute path on the node (not / and without . or ..), not "relative/dir"'],
    [["--net-dir", ""], '--net-dir must be an absolute path on the node (not / and without . or ..), not ""'],
    [
      ["--netns-dir", "/var/run/../netns"],
      '--netns-dir must be an absolute path on the node (not / and without . or ..), not "/var/run/../netns"',
    ],
    [
      ["--cri-socket", "relative.sock"],
      '--cri-socket must be an absolute path on the node (not / and without . or ..), not "relative.sock"',
    ],
    [
      ["--startup-taint", "meshcni.io/not-ready:Sometimes"],
      "--startup-taint must look like key[=value][:NoSchedule|PreferNoSchedule|NoExecute]",
    ],
    [["--namespace", "Bad_NS"], '--namespace must be a namespace\'s name (a DNS label), not "Bad_NS"'],
    [["--namespace", "kube-system", "--create-namespace"], "--create-namespace: kube-system is the cluster's own"],
    [["--image", ""], '--image must be an image reference (registry/name:tag), not ""'],
    [["--image", "ghcr.io/meshcni/meshcni: 1"], '--image must be an image reference (registry/name:tag), not "ghcr.io/meshcni/meshcni: 1"'],
    [["--memory-limit", "lots"], '--memory-limit must be a Kubernetes quantity (like 96Mi, 10m, 1), not "lots"'],
    [["--cpu-request=-1"], '--cpu-request must be a Kubernetes quantity (like 96Mi, 10m, 1), not "-1"'],
    [["--memory-request", "1Gi", "--memory-limit", "512Mi"], "--memory-request 1Gi is above --memory-limit 512Mi"],
    [["--metrics-port", "0x50"], '--metrics-port must be a port, not "0x50"'],
    [["--priority-class", "Critical!"], '--priority-class must be a PriorityClass\'s name, not "Critical!"'],
    [["--label", "app.kubernetes.io/name=foo"], "--label app.kubernetes.io/name: the DaemonSet selects its pods by it"],
    [["--label", "team=a b"], '--label: "a b" (for team) is no label value'],
    [["--node-selector", "Bad!=x"], '--node-selector: "Bad!" is no label key'],
    [["--netconf", "incomming-proxy-port=4000"], "--netconf incomming-proxy-port: no such setting (did you mean incoming-proxy-port?)"],
    [["--evict-namespaces", "shop"], "--evict-namespaces needs --repair evict"],
    [["--repair", "evict", "--evict-namespaces", "shop,kube-system"], "--evict-namespaces: kube-system's pods are never meshed"],
    [["--repair", "evict", "--evict-namespaces", "shop,it's"], `--evict-namespaces: "it's" is no namespace name`],
  ])("refuses %j, naming the flag and the value", (argv, message) => {
    expect(() => parseManifestArgs(argv)).toThrow(message);
  });

  it("accepts what Kubernetes takes: quantities in every form, digests, registries with ports, another namespace when asked", () => {
    const options = parseManifestArgs([
      ...["--cpu-request", "0.5", "--memory-request", "1e8", "--memory-limit", "0.1Gi"],
      ...["--image", `registry.local:5000/mesh/meshcni:0.1.0@sha256:${"0".repeat(64)}`],
      ...["--namespace", "mesh-system", "--create-namespace", "--label", "example.com/team=net"],
    ]);
    expect(options.warnings).toEqual([]);
    expect(
      rendered(["--namespace", "mesh-system", "--create-namespace"]).find((object) => object.kind === "Namespace")?.metadata.name,
    ).toBe("mesh-system");
  });

  it("warns, and renders, what works but is likely not meant: another namespace without its Namespace, no priority class", () => {
    expect(parseManifestArgs(["--namespace", "linkerd", "--priority-class", ""]).warnings).toEqual([
      "no --priority-class: under memory pressure the kubelet may evict the agent before the pods it protects",
      "no Namespace object: linkerd must exist and admit privileged pods (pod-security.kubernetes.io/enforce=privileged); --create-namespace to include one",
    ]);
    const daemonSet = rendered(["--priority-class", ""]).find((object) => object.kind === "DaemonSet") as unknown as IDaemonSet;
    expect(daemonSet.spec!.template.spec).not.toHaveProperty("priorityClassName");
  });
});
