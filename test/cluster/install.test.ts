import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, relative } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { RealCluster } from "../kit/cluster/cluster.js";
import { hostPort, perFamily } from "../kit/cluster/families.js";
import { nodeIp, nodeName, paths, startupTaint } from "../kit/cluster/layout.js";
import { bindsTokensToNodes, currentLeg, loadsDropIns } from "../kit/cluster/leg.js";
import { agentSeries, Meshcni } from "../kit/cluster/meshcni.js";
import { chainedTypes, loadedTypes, primaryConflistPath, primaryTypes, rewritePrimaryConflist } from "../kit/cluster/node.js";
import { pluginTokenClaims } from "../kit/cluster/tokens.js";
import { asList, meshedDeployment, plainPod, proxyInbound, proxyOutbound } from "../kit/cluster/workloads.js";
import { until } from "../kit/common.js";
import { describeAsRoot } from "../kit/root-suites.js";

interface NodeObject {
  spec: { taints?: Array<{ key: string; effect: string }> };
  status: { conditions: Array<{ type: string; status: string; reason: string; message: string }> };
}

/**
 * meshcni installed on a real single-node cluster as an operator installs it (`meshcni
 * manifests | kubectl apply`), its redirects proven with real TCP between real pods that
 * kubelet started through containerd 2.
 */
/** An address past the cluster, of its primary family (documentation's, or a ULA no namespace holds): nothing answers there. */
const outside = hostPort(perFamily("203.0.113.10", "fd00:ffff::10")[0]!, 80);

describeAsRoot("meshcni on a real cluster", () => {
  const cluster = new RealCluster();
  const meshcni = new Meshcni(cluster);
  let earlyBefore = "";
  /** The primary's conflist as its installer wrote it, before meshcni. */
  let primaryAsWritten = "";
  const dropIns = loadsDropIns(currentLeg());

  beforeAll(async () => {
    await cluster.up();
    // Started before meshcni: they tolerate its startup taint, as a DaemonSet's pods do.
    await cluster.kubectl(
      ["apply", "-f", "-"],
      asList(
        plainPod("server", { early: true }),
        plainPod("client", { early: true }),
        meshedDeployment("early", { sidecar: "native", early: true }),
      ),
    );
    await cluster.kubectl(["wait", "--for=condition=Ready", "pod", "--all", "--timeout=90s"]);
    earlyBefore = await cluster.connect("client", hostPort(await cluster.podIpOf("app=early"), 8080));
    primaryAsWritten = readFileSync(primaryConflistPath, "utf8");
    await meshcni.deploy();
  }, 300_000);

  afterAll(async () => {
    await cluster.down();
  }, 120_000);

  it("gets ready: chains itself last, lifts the startup taint, writes MeshcniReady; meshcni status says so", async () => {
    expect(chainedTypes()).toEqual([...primaryTypes, "meshcni"]);
    // In the runtime's own word: the chain it runs for a new pod.
    expect(await loadedTypes()).toEqual([...primaryTypes, "meshcni"]);
    // Where the runtime loads drop-ins, the primary's file is byte for byte its installer's: meshcni's entry is a file of its own.
    if (dropIns) expect(readFileSync(primaryConflistPath, "utf8")).toBe(primaryAsWritten);
    else expect(readFileSync(primaryConflistPath, "utf8")).not.toBe(primaryAsWritten);
    expect(await agentSeries("meshcni_chain_mode", { mode: dropIns ? "dropin" : "conflist" })).toBe(1);
    for (const file of ["ZZZ-meshcni-kubeconfig"]) expect(existsSync(join(paths.cniConfDir, file))).toBe(true);
    expect(existsSync(join(paths.cniBinDir, "meshcni"))).toBe(true);
    let node: NodeObject | undefined;
    await until(
      async () => {
        node = await cluster.get<NodeObject>("node", nodeName);
        return !(node.spec.taints ?? []).some((taint) => taint.key === startupTaint);
      },
      30_000,
      250,
    );
    const condition = node!.status.conditions.find((c) => c.type === "MeshcniReady");
    expect(condition).toMatchObject({ status: "True", reason: "Ready" });
    // The plugin's token: minted by the real TokenRequest for meshcni-plugin, bound to this Node (it dies with it) where the
    // server can bind one (1.31 on); unbound before, as docs/reference.md's Compatibility says.
    const claims = pluginTokenClaims();
    expect(claims.sub).toBe("system:serviceaccount:meshcni:meshcni-plugin");
    if (bindsTokensToNodes(currentLeg()))
      expect(claims["kubernetes.io"]).toMatchObject({
        node: { name: nodeName, uid: (await cluster.get<{ metadata: { uid: string } }>("node", nodeName)).metadata.uid },
      });
    else expect(claims["kubernetes.io"]).not.toHaveProperty("node");
    expect(claims.exp! - claims.iat!).toBe(3600);
    const status = await meshcni.cli("status");
    expect(status.stderr).toBe("");
    const network = (JSON.parse(primaryAsWritten) as { name: string }).name;
    const chainedBy = dropIns
      ? `by its drop-in ${network}/zz-meshcni\\.conf`
      : `in ${basename(primaryConflistPath).replaceAll(".", "\\.")}`;
    expect(status.stdout).toMatch(new RegExp(`^${nodeName}\\s+True\\s+Ready\\s+0\\.1\\.0\\s+chained ${chainedBy}`, "m"));
  });

  it("redirects a meshed pod that started before meshcni was chained, in place, found through containerd's CRI", async () => {
    expect(earlyBefore).toMatch(/^early dst=/);
    const ip = await cluster.podIpOf("app=early");
    await until(async () => (await cluster.connect("client", hostPort(ip, 8080))).startsWith(proxyInbound), 60_000, 500);
    expect(await cluster.connect("client", hostPort(ip, 8080))).toBe(
      `${proxyInbound} dst=${hostPort(ip, 8080)} src=${await cluster.podIp("client")}`,
    );
  });

  it("redirects a meshed Deployment as Linkerd's injector writes it: native sidecar and plain container, skip-ports annotations", async () => {
    const annotations = { "config.linkerd.io/skip-inbound-ports": "9090", "config.linkerd.io/skip-outbound-ports": "443" };
    await cluster.kubectl(
      ["apply", "-f", "-"],
      asList(
        meshedDeployment("native", { sidecar: "native", annotations }),
        meshedDeployment("plain", { sidecar: "container", annotations }),
      ),
    );
    await cluster.kubectl(["rollout", "status", "deployment/native", "deployment/plain", "--timeout=90s"]);
    const client = await cluster.podIp("client");
    const server = await cluster.podIp("server");
    for (const app of ["native", "plain"]) {
      const ip = await cluster.podIpOf(`app=${app}`);
      const pod = await cluster.podNameOf(`app=${app}`);
      // Inbound to the app's port reaches the proxy; the skipped inbound port reaches the app.
      expect(await cluster.connect("client", hostPort(ip, 8080))).toBe(`${proxyInbound} dst=${hostPort(ip, 8080)} src=${client}`);
      expect(await cluster.connect("client", hostPort(ip, 9090))).toBe(`${app}-9090 dst=${hostPort(ip, 9090)} src=${client}`);
      // Outbound from the app reaches the proxy, whatever the destination (one outside the cluster included)…
      expect(await cluster.connect(pod, hostPort(server, 8080))).toBe(`${proxyOutbound} dst=${hostPort(server, 8080)} src=${ip}`);
      expect(await cluster.connect(pod, outside)).toBe(`${proxyOutbound} dst=${outside} src=${ip}`);
      // …but the skipped outbound port, and the proxy's own connections (UID 2102), go direct.
      expect(await cluster.connect(pod, hostPort(server, 443))).toBe(`server-443 dst=${hostPort(server, 443)} src=${ip}`);
      expect(await cluster.connect(pod, hostPort(server, 8080), { container: "linkerd-proxy" })).toBe(
        `server-8080 dst=${hostPort(server, 8080)} src=${ip}`,
      );
    }
  });

  it("leaves an unmeshed pod untouched", async () => {
    const server = await cluster.podIp("server");
    expect(await cluster.connect("client", hostPort(server, 8080))).toBe(
      `server-8080 dst=${hostPort(server, 8080)} src=${await cluster.podIp("client")}`,
    );
    expect(await cluster.connect("client", outside)).toMatch(/^error: /);
  });

  it("skips, for a control-plane pod, the ports of the real `kubernetes` Service (443 and its targetPort)", async () => {
    const service = await cluster.get<{ spec: { ports: Array<{ port: number; targetPort: number }> } }>("service", "kubernetes");
    expect(service.spec.ports).toEqual([expect.objectContaining({ port: 443, targetPort: 6444 })]);
    await cluster.kubectl(
      ["apply", "-f", "-"],
      asList(meshedDeployment("destination", { sidecar: "native", labels: { "linkerd.io/control-plane-component": "destination" } })),
    );
    await cluster.kubectl(["rollout", "status", "deployment/destination", "--timeout=90s"]);
    const pod = await cluster.podNameOf("app=destination");
    const ip = await cluster.podIpOf("app=destination");
    const server = await cluster.podIp("server");
    expect(await cluster.connect(pod, hostPort(server, 443))).toBe(`server-443 dst=${hostPort(server, 443)} src=${ip}`);
    expect(await cluster.connect(pod, hostPort(server, 6444))).toBe(`server-6444 dst=${hostPort(server, 6444)} src=${ip}`);
    // linkerd-cni's fallback (the Service unreadable) would skip 6443: the real Service does not name it.
    expect(await cluster.connect(pod, hostPort(server, 6443))).toBe(`${proxyOutbound} dst=${hostPort(server, 6443)} src=${ip}`);
    expect(nodeIp).not.toBe(server);
  });

  it("seed 000: the primary's conflist rewritten in place while pods run: meshcni stays in the runtime's chain (by drop-in, never out of it; else chained again), and the next pod is redirected", async () => {
    const chained = async () => (await meshcni.log()).filter((line) => /^(re-)?chained meshcni$/.test(String(line.msg))).length;
    const before = await chained();
    await rewritePrimaryConflist();
    const rewritten = readFileSync(primaryConflistPath, "utf8");
    // The agent may chain meshcni again within milliseconds: its log, not the file read at once, shows the rewrite was seen.
    if (!dropIns) await until(async () => (await chained()) > before && chainedTypes().at(-1) === "meshcni", 20_000, 250);
    await cluster.kubectl(["apply", "-f", "-"], asList(meshedDeployment("after-rewrite", { sidecar: "container" })));
    await cluster.kubectl(["rollout", "status", "deployment/after-rewrite", "--timeout=90s"]);
    if (dropIns) {
      // The runtime reloaded on the rewrite and found meshcni's drop-in with it: meshcni wrote nothing, and was never out of the chain.
      expect(await loadedTypes()).toEqual([...primaryTypes, "meshcni"]);
      expect(readFileSync(primaryConflistPath, "utf8")).toBe(rewritten);
      expect(await chained()).toBe(before);
    }
    const ip = await cluster.podIpOf("app=after-rewrite");
    expect(await cluster.connect("client", hostPort(ip, 8080))).toBe(
      `${proxyInbound} dst=${hostPort(ip, 8080)} src=${await cluster.podIp("client")}`,
    );
  });

  it("deploy/ as committed: real kustomize builds it and its components into its files' objects; the real API server accepts each (server-side dry run)", async () => {
    // deploy/ is checked against `meshcni manifests` by test/unit/deploy.test.ts; this is the independent half.
    const deploy = join(import.meta.dirname, "../../deploy");
    type Manifest = { kind: string; metadata: { name: string; namespace?: string } };
    const objectsOf = (yaml: string) => parseAllDocuments(yaml).map((document) => document.toJS() as Manifest);
    const sorted = (objects: Manifest[]) =>
      objects.sort((a, b) => `${a.kind}/${a.metadata.name}`.localeCompare(`${b.kind}/${b.metadata.name}`));
    const filesIn = (dir: string) =>
      readdirSync(dir, { recursive: true, encoding: "utf8" }).filter(
        (file) => file.endsWith(".yaml") && !file.endsWith("kustomization.yaml"),
      );
    const committed = (files: string[]) => files.flatMap((file) => objectsOf(readFileSync(join(deploy, file), "utf8")));
    const overlay = mkdtempSync(join(tmpdir(), "meshcni-deploy-"));
    try {
      const components = readdirSync(join(deploy, "components")).map(
        (name) => `  - ${relative(overlay, join(deploy, "components", name))}\n`,
      );
      const kustomization = `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ${relative(overlay, deploy)}\ncomponents:\n${components.join("")}`;
      writeFileSync(join(overlay, "kustomization.yaml"), kustomization);
      const built = objectsOf(await cluster.kubectl(["kustomize", "--load-restrictor", "LoadRestrictionsNone", overlay]));
      // kubectl's kustomize does not know the admission policy kinds are cluster-scoped and gives them the namespace: the
      // API server drops it (below), so it is set aside here.
      const admission = built.filter((object) => object.kind.startsWith("ValidatingAdmissionPolicy"));
      expect(admission.map((object) => object.metadata.namespace)).toEqual(["meshcni", "meshcni"]);
      for (const object of admission) delete object.metadata.namespace;
      expect(sorted(built)).toEqual(sorted(committed(filesIn(deploy))));
    } finally {
      rmSync(overlay, { recursive: true, force: true });
    }
    // The base alone: the cluster has no Prometheus Operator, whose kind the alerts' component holds.
    const base = committed(readdirSync(deploy).filter((file) => file.endsWith(".yaml") && file !== "kustomization.yaml"));
    const dryRun = await cluster.kubectl(["apply", "-k", deploy, "--dry-run=server", "-o", "json"]);
    const accepted = JSON.parse(dryRun) as { items: Manifest[] };
    expect(sorted(accepted.items).map(({ kind, metadata }) => ({ kind, name: metadata.name, namespace: metadata.namespace }))).toEqual(
      sorted(base).map(({ kind, metadata }) => ({ kind, name: metadata.name, namespace: metadata.namespace })),
    );
  });
});
