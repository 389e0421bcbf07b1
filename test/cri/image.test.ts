import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, expect, it } from "vitest";
import { buildImage, imageName } from "../../build/image.js";
import { AgentHarness } from "../kit/agent.js";
import { FakeApiServer, podObject } from "../kit/api-server.js";
import { agentTemplate, sleep } from "../kit/common.js";
import type { ContainerConfig } from "../kit/cri/client.js";
import { ContainerdNode, type Sandbox } from "../kit/cri/containerd.js";
import { natRules, TestNetwork } from "../kit/network.js";
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

  beforeAll(async () => {
    const archive = join(runtime.dir, "meshcni-image.tar");
    await buildImage([process.arch === "arm64" ? "arm64" : "amd64"], archive);
    await api.start();
    api.addPod(podObject("meshcni", "meshcni-img01", { proxy: false, nodeName: node, daemonSet: "meshcni" }));
    api.addDaemonSet("meshcni", "meshcni");
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
    const mount = (hostPath: string, readonly = false) => ({ containerPath: `/host${hostPath}`, hostPath, readonly });
    const config: ContainerConfig = {
      metadata: { name: "install" },
      image: { image: imageName },
      command: ["/usr/local/bin/meshcni", "install"],
      args: ["--node", node, "--state-dir", net.stateDir, "--netns-dir", netnsDir, "--cri-socket", runtime.socket, "--listen", ""],
      envs: [
        { key: "CONTAINER_MOUNT_PREFIX", value: "/host" },
        { key: "DEST_CNI_NET_DIR", value: host.netDir },
        { key: "DEST_CNI_BIN_DIR", value: host.binDir },
        { key: "CNI_NETWORK_CONFIG", value: agentTemplate(net.stateDir) },
        { key: "KUBERNETES_SERVICE_HOST", value: "127.0.0.1" },
        { key: "KUBERNETES_SERVICE_PORT", value: String(api.port) },
        { key: "NODE_NAME", value: node },
        { key: "POD_NAMESPACE", value: "meshcni" },
        { key: "POD_NAME", value: "meshcni-img01" },
      ],
      mounts: [
        mount(host.netDir),
        mount(host.binDir),
        mount(net.stateDir),
        { ...mount(netnsDir, true), propagation: "PROPAGATION_HOST_TO_CONTAINER" },
        // The runtime's CRI socket (the DaemonSet mounts its dir; here the dir holds containerd's own root).
        mount(runtime.socket, true),
        { containerPath: "/var/run/secrets/kubernetes.io/serviceaccount", hostPath: host.serviceAccountDir, readonly: true },
      ],
      logPath: "install.log",
      linux: {
        securityContext: {
          capabilities: { addCapabilities: ["SYS_ADMIN", "NET_ADMIN", "NET_RAW"], dropCapabilities: ["ALL"] },
          readonlyRootfs: true,
        },
      },
    };
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
  });
});
