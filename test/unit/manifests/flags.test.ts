import type { IDaemonSet } from "kubernetes-models/apps/v1";
import { describe, expect, it } from "vitest";
import { parseManifestArgs } from "../../../src/manifests/main.js";
import { manifestsYaml } from "../../../src/manifests/yaml.js";
import { linkerdDefaults } from "../../../src/mesh/defaults.js";
import { agentOf, rendered } from "../../kit/manifests/daemonset.js";
import { expectValid } from "../../kit/manifests/k8s-schema.js";

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
    [["--repair", "evict"], "--repair evict needs --evict-namespaces NS,NS"],
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

  it("says an inbound-ports-to-ignore that leaves out the proxy's admin and control ports (the list replaces the default whole)", () => {
    expect(parseManifestArgs(["--netconf", 'inbound-ports-to-ignore=["25"]']).warnings).toEqual([
      `--netconf inbound-ports-to-ignore=["25"] leaves out 4191, 4190, the proxy's admin and control ports unless it was given others ` +
        `(Linkerd's chart always ignores them; the list given replaces the default whole): give ["4191","4190","25"] if the proxy listens there`,
    ]);
    expect(parseManifestArgs(["--netconf", 'inbound-ports-to-ignore=["4190-4191", 25]']).warnings).toEqual([]);
    expect(parseManifestArgs(["--netconf", 'inbound-ports-to-ignore=["4191", "4190", "25"]']).warnings).toEqual([]);
  });
});
