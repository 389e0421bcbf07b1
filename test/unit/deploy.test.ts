import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { DaemonSet, type IDaemonSet } from "kubernetes-models/apps/v1";
import { ClusterRole, ClusterRoleBinding, Role, RoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1";
import { ConfigMap, Namespace, ServiceAccount } from "kubernetes-models/v1";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { parseInstallerOptions } from "../../src/installer/options.js";
import { renderTemplate } from "../../src/installer/template.js";
import { linkerdDefaults } from "../../src/mesh/defaults.js";
import { parseNetConf } from "../../src/mesh/netconf.js";

const deployDir = join(import.meta.dirname, "../../deploy");
const models: Record<string, new (data: never) => { validate(): void }> = {
  DaemonSet: DaemonSet as never,
  ClusterRole: ClusterRole as never,
  ClusterRoleBinding: ClusterRoleBinding as never,
  Role: Role as never,
  RoleBinding: RoleBinding as never,
  ConfigMap: ConfigMap as never,
  Namespace: Namespace as never,
  ServiceAccount: ServiceAccount as never,
};

type Manifest = { kind: string; metadata: { name: string; namespace?: string }; [key: string]: unknown };

function load(file: string): Manifest[] {
  return parseAllDocuments(readFileSync(join(deployDir, file), "utf8")).map((doc) => {
    if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0]!.message}`);
    return doc.toJS() as Manifest;
  });
}

const kustomization = load("kustomization.yaml")[0] as unknown as { resources: string[]; namespace: string };
const manifests = kustomization.resources.flatMap(load);
const byKind = (kind: string) => manifests.filter((manifest) => manifest.kind === kind);
const daemonSet = byKind("DaemonSet")[0] as unknown as IDaemonSet;
const podSpec = daemonSet.spec!.template.spec!;
const container = podSpec.containers[0]!;
const env = container.env ?? [];
/** The agent's settings as the DaemonSet gives them: its args and the env values it sets. */
const agentOptions = (args: string[] = []) =>
  parseInstallerOptions(
    args,
    Object.fromEntries(env.flatMap((variable) => (variable.value === undefined ? [] : [[variable.name, variable.value]]))),
    "/usr/local/bin/meshcni",
  );

describe("deploy/ manifests", () => {
  it("lists every manifest in the kustomization, and nothing that is missing", () => {
    const files = readdirSync(deployDir).filter((name) => name.endsWith(".yaml") && name !== "kustomization.yaml");
    expect([...kustomization.resources].sort()).toEqual(files.sort());
  });

  it("validates each object against the Kubernetes OpenAPI schema", () => {
    expect(manifests.length).toBeGreaterThanOrEqual(6);
    for (const manifest of manifests) {
      const Model = models[manifest.kind];
      expect(Model, `no schema for ${manifest.kind}`).toBeDefined();
      expect(() => new Model!(manifest as never).validate(), `${manifest.kind}/${manifest.metadata.name}`).not.toThrow();
    }
  });

  it("runs on every node, on the host network, with the host dirs mounted where the agent looks", () => {
    expect(podSpec.hostNetwork).toBe(true);
    expect(podSpec.tolerations).toContainEqual({ operator: "Exists" });
    const options = agentOptions();
    const mounts = container.volumeMounts!.map((mount) => mount.mountPath);
    expect(mounts).toContain(`${options.hostRoot}${options.netDir}`);
    expect(mounts).toContain(`${options.hostRoot}${options.binDir}`);
    const hostPaths = podSpec.volumes!.map((volume) => volume.hostPath?.path);
    expect(hostPaths).toEqual(expect.arrayContaining([options.netDir, options.binDir]));
  });

  it("wires readiness to `meshcni ready`, with the agent's own environment", () => {
    expect(container.command!.slice(1)).toEqual(["install"]);
    expect(container.readinessProbe!.exec!.command).toEqual([container.command![0], "ready"]);
  });

  it("gives the agent its node, its own pod, and the host's netns and state dirs for the audit", () => {
    const fieldOf = (name: string) => env.find((variable) => variable.name === name)?.valueFrom?.fieldRef?.fieldPath;
    expect([fieldOf("NODE_NAME"), fieldOf("POD_NAME"), fieldOf("POD_NAMESPACE")]).toEqual([
      "spec.nodeName",
      "metadata.name",
      "metadata.namespace",
    ]);
    const options = agentOptions(container.args);
    expect(options).toMatchObject({
      repair: "redirect",
      onStop: "auto",
      startupTaint: { key: "meshcni.io/not-ready", effect: "NoSchedule" },
    });
    const mounts = Object.fromEntries(container.volumeMounts!.map((mount) => [mount.mountPath, mount]));
    // The sweep writes records (adopted, repaired) and removes stale ones.
    expect(mounts[`${options.hostRoot}${options.stateDir}`]).toBeDefined();
    expect(mounts[`${options.hostRoot}${options.stateDir}`]!.readOnly).toBeFalsy();
    for (const dir of options.netnsDirs) expect(mounts[`${options.hostRoot}${dir}`]).toMatchObject({ mountPropagation: "HostToContainer" });
    expect(container.securityContext!.capabilities!.add).toEqual(["SYS_ADMIN", "NET_ADMIN", "NET_RAW"]);
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

  it("grants the service account exactly what the plugin and the agent use", () => {
    const role = byKind("ClusterRole")[0] as unknown as { rules: unknown[] };
    expect(role.rules).toEqual([
      { apiGroups: [""], resources: ["pods"], verbs: ["get", "list", "watch", "patch"] },
      { apiGroups: [""], resources: ["pods/eviction"], verbs: ["create"] },
      { apiGroups: [""], resources: ["namespaces"], verbs: ["get"] },
      { apiGroups: [""], resources: ["events"], verbs: ["create"] },
      { apiGroups: [""], resources: ["nodes"], verbs: ["get", "patch"] },
    ]);
    const ownNamespace = byKind("Role")[0] as unknown as { rules: unknown[] };
    expect(ownNamespace.rules).toEqual([{ apiGroups: ["apps"], resources: ["daemonsets"], verbs: ["get"] }]);
    for (const kind of ["ClusterRoleBinding", "RoleBinding"]) {
      const binding = byKind(kind)[0] as unknown as { subjects: Array<{ name: string; namespace: string }> };
      expect(binding.subjects).toEqual([{ kind: "ServiceAccount", name: podSpec.serviceAccountName, namespace: kustomization.namespace }]);
    }
  });
});
