import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { execa } from "execa";
import type { IDaemonSet } from "kubernetes-models/apps/v1";
import { afterAll, beforeAll, expect, it } from "vitest";
import { bunRuntimes } from "../../build/bun-runtime.js";
import { buildImage, imageName, packageLockPath } from "../../build/image.js";
import { parseManifestArgs } from "../../src/manifests/main.js";
import { renderManifests } from "../../src/manifests/render.js";
import { AgentHarness } from "../kit/agent/harness.js";
import { FakeApiServer, podObject } from "../kit/api/server.js";
import { agentTemplate, sleep, until } from "../kit/common.js";
import { ContainerdNode, type Sandbox } from "../kit/cri/containerd.js";
import { containerOf } from "../kit/cri/pod-spec.js";
import { TestNetwork } from "../kit/netns/network.js";
import { natRules } from "../kit/netns/plugin-process.js";
import { describeAsRoot } from "../kit/root-suites.js";

const node = "image-node";
const daemonSet = readFileSync(join(import.meta.dirname, "../../deploy/daemonset.yaml"), "utf8");

/**
 * The agent run from the image `npm run image` builds, as its DaemonSet runs it: a
 * host-network sandbox, the image's own binary, the host's CNI dirs, state dir and netns
 * dir mounted under /host (here they are temp dirs of this host), the ServiceAccount's
 * token and CA projected. It installs itself and chains meshcni into the config
 * containerd reads; the pods containerd then starts are redirected.
 */
describeAsRoot("the agent from its image under containerd", () => {
  const api = new FakeApiServer();
  const net = new TestNetwork(74);
  const host = new AgentHarness({ onHost: true });
  const runtime = new ContainerdNode({ confDir: host.netDir, binDir: host.binDir });
  const netnsDir = join(runtime.dir, "state/io.containerd.grpc.v1.cri/netns");
  let agentContainer = "";

  const archive = join(runtime.dir, "meshcni-image.tar");

  beforeAll(async () => {
    await buildImage([process.arch === "arm64" ? "arm64" : "amd64"], archive);
    await api.start();
    api.addPod(podObject("meshcni", "meshcni-img01", { proxy: false, nodeName: node, daemonSet: "meshcni" }));
    api.addDaemonSet("meshcni", "meshcni");
    // Registered with the startup taint, as the DaemonSet's --startup-taint expects.
    api.addNode({ metadata: { name: node }, spec: { taints: [{ key: "meshcni.io/not-ready", effect: "NoSchedule" }] } });
    host.rotateToken(api.agentToken, api.caPem);
    writeFileSync(host.path("10-primary.conflist"), JSON.stringify(net.primaryConflist("primary")));
    mkdirSync(net.stateDir, { recursive: true });
    // As on a systemd host, where / is shared: the agent sees netns mounted after it started.
    mkdirSync(netnsDir, { recursive: true });
    await execa("mount", ["--bind", netnsDir, netnsDir]);
    await execa("mount", ["--make-shared", netnsDir]);
    await runtime.start();
    await runtime.importImage(archive);
  }, 180_000);

  afterAll(async () => {
    await runtime.stop();
    await host.cleanup();
    await net.cleanup();
    await api.stop();
  });

  it("names the image the DaemonSet runs", () => {
    expect(daemonSet).toContain(`image: ${imageName}`);
  });

  it("records what it holds in its config's labels: the pinned Bun runtime and the locked Debian packages", async () => {
    const blob = async (name: string) => JSON.parse((await execa("tar", ["-xOf", archive, name])).stdout);
    const at = (digest: string) => `blobs/sha256/${digest.slice("sha256:".length)}`;
    const [index] = (await blob("index.json")).manifests;
    const [manifest] = (await blob(at(index.digest))).manifests;
    const { config } = await blob(at((await blob(at(manifest.digest))).config.digest));
    const arch = process.arch === "arm64" ? "arm64" : "amd64";
    const lock = JSON.parse(readFileSync(packageLockPath, "utf8"))[arch] as Record<string, { version: string }>;
    expect(config.Labels["io.meshcni.debian-packages"].split(" ").sort()).toEqual(
      Object.entries(lock)
        .map(([name, { version }]) => `${name}=${version}`)
        .sort(),
    );
    expect(config.Labels["io.meshcni.bun-runtime"]).toBe(
      `${bunRuntimes[arch].name}@${bunRuntimes[arch].version} ${bunRuntimes[arch].integrity}`,
    );
  });

  it("installs itself from the image and chains meshcni into containerd's config; a pod started before it is repaired, the next ones redirected", async () => {
    api.addPod(podObject("shop", "early", { proxy: "container" }));
    const early = await runtime.runPod(runtime.sandboxConfig("shop", "early"));
    api.addPod(podObject("shop", "early", { proxy: "container", nodeName: node, podIP: early.ip }));
    expect(await natRules(early.podNetns, "nft")).toEqual([]);
    // Host network, as the DaemonSet's pod: no hostname of its own (no UTS namespace).
    const sandboxConfig = {
      ...runtime.sandboxConfig("meshcni", "meshcni-img01"),
      hostname: "",
      linux: {
        cgroupParent: runtime.cgroupParent,
        securityContext: { namespaceOptions: { network: "NODE" as const, pid: "CONTAINER" as const } },
      },
    };
    const sandbox = await runtime.client.runPodSandbox(sandboxConfig);
    runtime.sandboxes.add(sandbox);
    // The ConfigMap kubelet hands the container is the API's (the agent checks its netconf against it).
    const configMap = { cni_network_config: agentTemplate(net.stateDir) };
    api.setConfigMap("meshcni", "meshcni-config", configMap);
    // The container deploy/'s DaemonSet describes, for this node's dirs, as kubelet hands it to containerd.
    const manifests = renderManifests(
      parseManifestArgs(["--net-dir", host.netDir, "--bin-dir", host.binDir, "--netns-dir", netnsDir, "--cri-socket", runtime.socket]),
    );
    const config = containerOf(manifests.find((object) => object.kind === "DaemonSet") as unknown as IDaemonSet, "install", {
      pod: { name: "meshcni-img01", namespace: "meshcni", nodeName: node },
      // The one change: the plugin's template names this test's state dir, and the state dir's mount is it, so the host's
      // /var/run/meshcni is never touched.
      configMaps: { "meshcni-config": configMap },
      hostPath: (path) => (path === "/var/run/meshcni" ? net.stateDir : path),
      serviceEnv: { KUBERNETES_SERVICE_HOST: "127.0.0.1", KUBERNETES_SERVICE_PORT: String(api.port) },
      serviceAccountDir: host.serviceAccountDir,
      logPath: "install.log",
    });
    expect(config.linux?.securityContext).toMatchObject({
      seccomp: { profileType: "RuntimeDefault" },
      noNewPrivs: true,
      readonlyRootfs: true,
    });
    agentContainer = await runtime.client.createContainer(sandbox, config, sandboxConfig);
    await runtime.client.startContainer(agentContainer);
    const log = () => {
      const dir = join(runtime.dir, "logs", "uid-meshcni-meshcni-img01");
      return existsSync(join(dir, "install.log")) ? readFileSync(join(dir, "install.log"), "utf8") : "";
    };
    const started = performance.now();
    while (host.types("10-primary.conflist").at(-1) !== "meshcni") {
      const { status } = await runtime.client.containerStatus(agentContainer);
      if (status.state === "CONTAINER_EXITED" || performance.now() - started > 30_000)
        throw new Error(`the agent did not chain meshcni (${status.state}, exit ${status.exitCode}):\n${log()}`);
      await sleep(50);
    }
    expect(readdirSync(host.binDir)).toContain("meshcni");
    // Meshed pods are scheduled once the startup taint is lifted (the agent ready: its plugin's kubeconfig written). Chained
    // before that, a pod's ADD fails, retryably, until then (fail closed).
    await until(() => (api.nodes.get(node)?.spec as { taints?: unknown[] } | undefined)?.taints?.length === 0, 30_000);
    api.addPod(podObject("shop", "web", { proxy: "container" }));
    const pod: Sandbox = await runtime.runPod(runtime.sandboxConfig("shop", "web"));
    expect(await natRules(pod.podNetns, "nft")).toContain(":PROXY_INIT_REDIRECT - [0:0]");
    expect(log()).toContain("chained meshcni");
    expect(dirname(pod.netns)).toBe(netnsDir);
    // The agent's sweep, run in its container, enters the pod's netns through /host.
    while (!(await natRules(early.podNetns, "nft")).includes(":PROXY_INIT_REDIRECT - [0:0]")) {
      if (performance.now() - started > 30_000) throw new Error(`the early pod was not repaired:\n${log()}`);
      await sleep(50);
    }
    // Its Event follows the rules (the sweep writes them first).
    const event = () => api.events.find((held) => (held.involvedObject as { name: string }).name === "early");
    while (!event() && performance.now() - started < 30_000) await sleep(50);
    expect(event()).toMatchObject({ reason: "MeshRedirectMissing", type: "Normal", action: "WriteRedirect" });
    // The runtime applied the DaemonSet's security context: seccomp filtering, no new privileges, three capabilities.
    const [pid] = (await execa("pgrep", ["-f", "^/usr/local/bin/meshcni install"])).stdout.trim().split("\n");
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    expect(status).toMatch(/^Seccomp:\s+2$/m);
    expect(status).toMatch(/^NoNewPrivs:\s+1$/m);
    // CAP_NET_ADMIN (12), CAP_NET_RAW (13), CAP_SYS_ADMIN (21).
    expect(status).toMatch(/^CapEff:\s+0000000000203000$/m);
    // Ready on the probe's port (the DaemonSet's --listen :9911, on the host network).
    expect((await fetch("http://127.0.0.1:9911/readyz")).status).toBe(200);
  });
});
