import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { renderTemplate } from "../../src/installer/template.js";
import { defaultManifestOptions, type ManifestOptions } from "../../src/manifests/options.js";
import { clusterRules, pluginServiceAccount } from "../../src/manifests/rbac.js";
import { manifestFiles } from "../../src/manifests/yaml.js";
import { linkerdDefaults } from "../../src/mesh/defaults.js";
import { parseNetConf } from "../../src/mesh/netconf.js";
import { manifestKinds } from "../kit/fixtures.js";
import { agentOf, deployDir, load, netconfText, parseYaml, rendered } from "../kit/manifests/daemonset.js";
import { expectValid } from "../kit/manifests/k8s-schema.js";

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
    [["--repair", "evict", "--evict-namespaces", "*", "--pod-monitor", "--startup-taint", ""]],
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
      { apiGroups: [""], resources: ["serviceaccounts"], verbs: ["list", "watch"], resourceNames: [podSpec.serviceAccountName] },
      { apiGroups: [""], resources: ["serviceaccounts/token"], verbs: ["create"], resourceNames: [pluginServiceAccount] },
      { apiGroups: [""], resources: ["configmaps"], verbs: ["get"], resourceNames: ["meshcni-config"] },
    ]);
    // The ConfigMap it reads is the one kubelet gives its env from, in its own namespace.
    expect(agent.configMap).toBe("meshcni-config");
    expect(env.find((variable) => variable.name === "CNI_NETWORK_CONFIG")?.valueFrom?.configMapKeyRef?.name).toBe(agent.configMap);
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
    // Read by name only: a namespace watch would send each change to every node.
    namespaces: "get",
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
